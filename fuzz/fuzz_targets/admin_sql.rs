#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| psprobe_fuzz::run("admin_sql", data));
