//! Numbers and JSON written the way the Python scripts this binary replaces wrote them
//! (`repr` of a float, `round`, `{:,}`, `json.dumps` with its `", "` / `": "` separators and
//! ASCII escapes), so result files and tables of new runs diff cleanly against older ones.

use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

/// Python's `repr(x)` of a float: the shortest digits that read back as `x`, fixed notation
/// with a ".0" for whole numbers, scientific ("1e-05", "1.5e+16") below 1e-4 or from 1e16.
pub fn repr(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // Rust's `{:e}` prints the same shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..16).contains(&exp) {
        let m = if digits.len() == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{exp_sign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        format!("{sign}{digits}{}.0", "0".repeat(int_len - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

/// Python's `round(x, digits)`: correctly rounded from the exact binary value, as Rust's
/// `{:.N}` formatting is.
pub fn round(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$}").parse().unwrap_or(x)
}

/// Python's `f"{n:,}"`: 10000 -> "10,000".
pub fn thousands(n: u64) -> String {
    group(&n.to_string())
}

/// Python's `f"{x:,.0f}"`.
pub fn thousands_f(x: f64) -> String {
    let s = format!("{x:.0}");
    match s.strip_prefix('-') {
        Some(digits) => format!("-{}", group(digits)),
        None => group(&s),
    }
}

fn group(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `json.dumps(value)`: one line.
pub fn line<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    write(value, PyFormatter { pretty: None })
}

/// `json.dumps(value, indent=1)`.
pub fn pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    write(
        value,
        PyFormatter {
            pretty: Some(PrettyFormatter::with_indent(b" ")),
        },
    )
}

fn write<T: Serialize + ?Sized>(value: &T, formatter: PyFormatter) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut ser)?;
    // Only ASCII and the escapes below are ever written.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// serde_json's compact or pretty layout with Python's separators, float repr and
/// `ensure_ascii` escapes.
struct PyFormatter {
    pretty: Option<PrettyFormatter<'static>>,
}

impl Formatter for PyFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        // json.dumps writes NaN as NaN; serde_json refuses it earlier, so this is finite.
        w.write_all(repr(value).as_bytes())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        for c in fragment.chars() {
            if c.is_ascii() {
                w.write_all(&[c as u8])?;
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.begin_array(w),
            None => w.write_all(b"["),
        }
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.end_array(w),
            None => w.write_all(b"]"),
        }
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.begin_array_value(w, first),
            None if first => Ok(()),
            None => w.write_all(b", "),
        }
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.end_array_value(w),
            None => Ok(()),
        }
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.begin_object(w),
            None => w.write_all(b"{"),
        }
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.end_object(w),
            None => w.write_all(b"}"),
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.begin_object_key(w, first),
            None if first => Ok(()),
            None => w.write_all(b", "),
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(p) => p.end_object_value(w),
            None => Ok(()),
        }
    }
}

/// A JSON object whose keys keep the order they were inserted in (Python dicts do; serde_json's
/// `Map` sorts them unless a feature is turned on for the whole workspace).
#[derive(Debug, Clone, PartialEq)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<T> Ordered<T> {
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value under `key`, inserted with `make` at the end when missing.
    pub fn entry(&mut self, key: &str, make: impl FnOnce() -> T) -> &mut T {
        let i = match self.0.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_string(), make()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }
}

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Ordered<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Ordered(out))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// Python's `str(value)` of a JSON value read back: strings bare, floats as `repr`.
pub fn display(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.is_f64() => n.as_f64().map(repr).unwrap_or_default(),
        serde_json::Value::Bool(true) => "True".to_string(),
        serde_json::Value::Bool(false) => "False".to_string(),
        serde_json::Value::Null => "None".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        // Each right-hand side is what python3 -c 'print(repr(x))' prints.
        let cases = [
            (0.0, "0.0"),
            (30.0, "30.0"),
            (1060000.0, "1060000.0"),
            (0.134, "0.134"),
            (27.370378021070028, "27.370378021070028"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (-2.5, "-2.5"),
        ];
        for (x, want) in cases {
            assert_eq!(repr(x), want, "{x:e}");
        }
    }

    #[test]
    fn round_and_thousands() {
        assert_eq!(round(99.45, 1), 99.5); // 99.45 is 99.4500000000000028...
        assert_eq!(round(0.125, 2), 0.12); // an exact tie rounds to even, as Python's
        assert_eq!(round(3.0254, 3), 3.025);
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(10000), "10,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands_f(123456.5), "123,456"); // half to even
        assert_eq!(thousands_f(-1234.0), "-1,234");
    }

    #[derive(Serialize)]
    struct Row {
        name: &'static str,
        n: u64,
        x: f64,
        none: Option<f64>,
        list: Vec<&'static str>,
    }

    #[test]
    fn json_lines_as_python_wrote_them() {
        let row = Row {
            name: "µs",
            n: 3,
            x: 1.0,
            none: None,
            list: vec!["a", "b"],
        };
        assert_eq!(
            line(&row).unwrap(),
            r#"{"name": "\u00b5s", "n": 3, "x": 1.0, "none": null, "list": ["a", "b"]}"#
        );
        assert_eq!(
            pretty(&row).unwrap(),
            "{\n \"name\": \"\\u00b5s\",\n \"n\": 3,\n \"x\": 1.0,\n \"none\": null,\n \"list\": [\n  \"a\",\n  \"b\"\n ]\n}"
        );
    }

    #[test]
    fn ordered_keeps_insertion_order() {
        let mut o = Ordered::default();
        *o.entry("z", || 0) += 1;
        *o.entry("a", || 0) += 2;
        *o.entry("z", || 0) += 1;
        assert_eq!(line(&o).unwrap(), r#"{"z": 2, "a": 2}"#);
        assert_eq!(o.get("a"), Some(&2));
        assert_eq!(o.get("b"), None);
    }
}
