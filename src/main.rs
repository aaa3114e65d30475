//! `psprobe`: thin entry point; everything lives in the library (`psprobe::main`).
//! Must not: hold logic of its own (nothing here is tested except through the binary).

fn main() -> std::process::ExitCode {
    psprobe::main()
}
