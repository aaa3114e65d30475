//! gzip for answers whose client asks for it (`Accept-Encoding`, RFC 9110 section 12.5.3):
//! Prometheus does, and its text compresses about tenfold.

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;

/// Answers shorter than this go as they are: a gzip header and trailer would not pay.
pub(super) const MIN_LENGTH: usize = 1024;

/// Whether the `Accept-Encoding` values allow gzip: `gzip` (or `x-gzip`) with a weight above
/// 0, or else `*` with one. Weights are not compared otherwise: gzip is the only coding offered.
pub(super) fn accepted<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let mut gzip = None;
    let mut any = None;
    for value in values {
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let weight = parts
                .filter_map(|p| {
                    let (name, v) = p.split_once('=')?;
                    name.trim().eq_ignore_ascii_case("q").then(|| v.trim())
                })
                .next()
                .map_or(1.0, |q| q.parse::<f64>().unwrap_or(0.0));
            match coding.as_str() {
                "gzip" | "x-gzip" => gzip = Some(weight > 0.0),
                "*" => any = Some(weight > 0.0),
                _ => {}
            }
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// `body` gzip-compressed at the fastest level: the answer is made on a shared machine, and
/// the fastest level already gets most of the gain on Prometheus text.
pub(super) fn compress(body: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 6), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(value: &str) -> bool {
        accepted([value.as_bytes()])
    }

    #[test]
    fn gzip_is_taken_when_asked_for() {
        assert!(ok("gzip"));
        assert!(ok("deflate, GZIP;q=0.5"));
        assert!(ok("x-gzip"));
        assert!(ok("*"));
        assert!(ok("br;q=1.0, *;q=0.1"));
        assert!(!ok(""));
        assert!(!ok("identity"));
        assert!(!ok("gzip;q=0"));
        assert!(!ok("gzip; q=0.000, *"));
        assert!(!ok("*;q=0"));
        assert!(!ok("deflate, br"));
        assert!(accepted(["identity".as_bytes(), "gzip".as_bytes()]));
    }

    #[test]
    fn compressed_bodies_decompress_to_the_original() {
        let body = "psprobe_connections_active 3\n".repeat(100);
        let packed = compress(body.as_bytes());
        assert!(packed.len() * 10 < body.len(), "{} bytes", packed.len());
        let mut unpacked = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(packed.as_slice()),
            &mut unpacked,
        )
        .unwrap();
        assert_eq!(unpacked, body);
    }
}
