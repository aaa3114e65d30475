//! Primitive field decoders of the MySQL protocol (nom parsers over complete slices).

use nom::bytes::complete::{take, take_till};
use nom::error::{Error, ErrorKind};
use nom::number::complete::{le_u16, le_u24, le_u64, u8 as byte};
use nom::{Err, IResult};

fn fail(input: &[u8]) -> Err<Error<&[u8]>> {
    Err::Error(Error::new(input, ErrorKind::Verify))
}

/// Length-encoded integer. `0xFB` (NULL) and `0xFF` (ERR marker) are not integers here.
pub fn lenenc_int(input: &[u8]) -> IResult<&[u8], u64> {
    let (rest, first) = byte(input)?;
    match first {
        0x00..=0xFA => Ok((rest, u64::from(first))),
        0xFC => le_u16(rest).map(|(r, v)| (r, u64::from(v))),
        0xFD => le_u24(rest).map(|(r, v)| (r, u64::from(v))),
        0xFE => le_u64(rest),
        _ => Err(fail(input)),
    }
}

/// Length-encoded string.
pub fn lenenc_bytes(input: &[u8]) -> IResult<&[u8], &[u8]> {
    let (rest, len) = lenenc_int(input)?;
    let len = usize::try_from(len).map_err(|_| fail(input))?;
    take(len)(rest)
}

/// NUL-terminated string; the NUL is consumed but not returned.
pub fn nul_terminated(input: &[u8]) -> IResult<&[u8], &[u8]> {
    let (rest, text) = take_till(|b| b == 0)(input)?;
    let (rest, _) = byte(rest)?;
    Ok((rest, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_int_all_widths() {
        assert_eq!(lenenc_int(&[0xFA]).unwrap().1, 250);
        assert_eq!(lenenc_int(&[0xFC, 0x34, 0x12]).unwrap().1, 0x1234);
        assert_eq!(lenenc_int(&[0xFD, 1, 2, 3]).unwrap().1, 0x030201);
        assert_eq!(
            lenenc_int(&[0xFE, 1, 0, 0, 0, 0, 0, 0, 0x80]).unwrap().1,
            0x8000_0000_0000_0001
        );
        assert!(lenenc_int(&[0xFB]).is_err());
        assert!(lenenc_int(&[0xFF]).is_err());
        assert!(lenenc_int(&[0xFC, 1]).is_err(), "truncated");
        assert!(lenenc_int(&[]).is_err());
    }

    #[test]
    fn strings() {
        assert_eq!(lenenc_bytes(b"\x03defX").unwrap(), (&b"X"[..], &b"def"[..]));
        assert!(lenenc_bytes(b"\x05ab").is_err());
        assert_eq!(
            nul_terminated(b"root\0rest").unwrap(),
            (&b"rest"[..], &b"root"[..])
        );
        assert!(nul_terminated(b"no-nul").is_err());
    }
}
