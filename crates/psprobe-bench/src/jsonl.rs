//! Reading the flat JSON objects of results.jsonl with each number's text kept. serde_json
//! without its `float_roundtrip` feature may parse a 17-digit float to its neighbour (turning
//! the feature on here would turn it on for psprobe too in workspace builds and compile psprobe
//! twice); results.csv passes the numbers through as written, and the summaries parse them with
//! Rust's correctly rounded `str::parse`.

use crate::pyfmt::Ordered;

/// One value of a flat object.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    Str(String),
    /// A number, as written.
    Num(String),
    Bool(bool),
    Null,
    /// An array or object, as written (not looked into).
    Nested(String),
}

impl Field {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Field::Num(text) => text.parse().ok(),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Field::Num(text) => text.parse().ok().or_else(|| {
                let x: f64 = text.parse().ok()?;
                (x >= 0.0 && x.fract() == 0.0).then_some(x as u64)
            }),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python's `str()` of the value json.loads gave: numbers as written (the writer printed
    /// them with repr), `None` for null.
    pub fn python_str(&self) -> String {
        match self {
            Field::Str(s) => s.clone(),
            Field::Num(text) | Field::Nested(text) => text.clone(),
            Field::Bool(true) => "True".into(),
            Field::Bool(false) => "False".into(),
            Field::Null => "None".into(),
        }
    }
}

/// Parses one line holding one JSON object.
pub fn parse_line(line: &str) -> Result<Ordered<Field>, String> {
    let mut p = Parser {
        s: line.as_bytes(),
        i: 0,
    };
    let object = p.object()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text after the object at byte {}", p.i));
    }
    Ok(object)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", b as char, self.i))
        }
    }

    fn object(&mut self) -> Result<Ordered<Field>, String> {
        self.expect(b'{')?;
        let mut out = Ordered::default();
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(out);
        }
        loop {
            self.expect(b'"')?;
            let key = self.string()?;
            self.expect(b':')?;
            self.ws();
            let value = self.value()?;
            out.0.push((key, value));
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
            }
        }
    }

    fn value(&mut self) -> Result<Field, String> {
        let rest = &self.s[self.i..];
        let literal = |word: &str, field: Field| {
            rest.starts_with(word.as_bytes())
                .then_some((word.len(), field))
        };
        if let Some((len, field)) = literal("true", Field::Bool(true))
            .or_else(|| literal("false", Field::Bool(false)))
            .or_else(|| literal("null", Field::Null))
        {
            self.i += len;
            return Ok(field);
        }
        match rest.first() {
            Some(b'"') => {
                self.i += 1;
                Ok(Field::Str(self.string()?))
            }
            Some(b'[' | b'{') => self.nested(),
            Some(b) if *b == b'-' || b.is_ascii_digit() => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
                {
                    self.i += 1;
                }
                let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                if text.parse::<f64>().is_err() {
                    return Err(format!("bad number {text:?}"));
                }
                Ok(Field::Num(text))
            }
            _ => Err(format!("expected a value at byte {}", self.i)),
        }
    }

    /// After the opening quote: the string up to the closing one, escapes decoded.
    fn string(&mut self) -> Result<String, String> {
        let mut out = Vec::new();
        loop {
            let b = *self.s.get(self.i).ok_or("unterminated string")?;
            self.i += 1;
            match b {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let e = *self.s.get(self.i).ok_or("unterminated escape")?;
                    self.i += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return Err(format!("bad escape at byte {}", self.i)),
                    };
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => out.push(b),
            }
        }
    }

    /// After "\u": four hex digits, and a second "\uXXXX" for a surrogate pair.
    fn unicode(&mut self) -> Result<char, String> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                return Err("lone surrogate".into());
            }
            self.i += 2;
            let low = self.hex4()?;
            0x10000 + ((first - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF)
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| "bad \\u escape".to_string())
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
        self.i += 4;
        u32::from_str_radix(&String::from_utf8_lossy(digits), 16).map_err(|e| e.to_string())
    }

    /// An array or object, skipped as balanced brackets (strings respected) and kept as text.
    fn nested(&mut self) -> Result<Field, String> {
        let start = self.i;
        let mut depth = 0usize;
        while let Some(&b) = self.s.get(self.i) {
            self.i += 1;
            match b {
                b'"' => {
                    self.string()?;
                }
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(Field::Nested(
                            String::from_utf8_lossy(&self.s[start..self.i]).into_owned(),
                        ));
                    }
                }
                _ => {}
            }
        }
        Err("unterminated array or object".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_text_and_parse_exactly() {
        let line = r#"{"workload": "oltp_point_select", "threads": 1, "sysbench_ctxsw_per_query": 1.3680024788266887, "proxy_cpu_us": null, "ok": true}"#;
        let row = parse_line(line).unwrap();
        let ctxsw = row.get("sysbench_ctxsw_per_query").unwrap();
        assert_eq!(ctxsw.python_str(), "1.3680024788266887");
        // The nearest double, which serde_json's default parser misses by one ULP.
        assert_eq!(ctxsw.as_f64(), Some(1.3680024788266887));
        assert_eq!(row.get("threads").unwrap().as_u64(), Some(1));
        assert_eq!(row.get("proxy_cpu_us"), Some(&Field::Null));
        assert_eq!(row.get("ok").unwrap().python_str(), "True");
        assert_eq!(
            row.get("workload").unwrap().as_str(),
            Some("oltp_point_select")
        );
        let keys: Vec<&str> = row.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "workload",
                "threads",
                "sysbench_ctxsw_per_query",
                "proxy_cpu_us",
                "ok"
            ]
        );
    }

    #[test]
    fn strings_escapes_and_nested_values() {
        let row = parse_line(
            r#"{"a": "q\"\\ \u00b5 \ud83d\ude00", "b": [1, "]", {"c": 2}], "d": -1.5e-07}"#,
        )
        .unwrap();
        assert_eq!(row.get("a").unwrap().as_str(), Some("q\"\\ µ 😀"));
        assert_eq!(
            row.get("b"),
            Some(&Field::Nested(r#"[1, "]", {"c": 2}]"#.into()))
        );
        assert_eq!(row.get("d").unwrap().as_f64(), Some(-1.5e-7));
        assert_eq!(parse_line("{}").unwrap().0.len(), 0);
    }

    #[test]
    fn broken_lines_are_errors() {
        for bad in [
            r#"{"a": 1"#,
            r#"{"a" 1}"#,
            r#"{"a": 1} x"#,
            r#"{"a": tru}"#,
            r#"{"a": "x}"#,
            r#"{"a": 1.2.3}"#,
            "[1]",
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
    }
}
