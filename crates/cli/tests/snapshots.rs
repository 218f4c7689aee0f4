//! Snapshots of what the `kroupier` binary prints where a user reads it first: `--help` of
//! every command, `--version`, the errors of bad input (with their exit codes) and the `--json`
//! outputs that need no cluster. Each case is a file in `tests/cmd/` (the command, its exit
//! code, its stdout and stderr; `[..]` stands for what changes from run to run, such as a
//! time). After a deliberate change, rewrite them with
//! `TRYCMD=overwrite cargo test -p kroupier-cli --test snapshots` and review the diff.

#[test]
fn the_command_line_prints_what_its_snapshots_say() {
    trycmd::TestCases::new()
        .register_bin(
            "kroupier",
            std::path::Path::new(env!("CARGO_BIN_EXE_kroupier")),
        )
        .case("tests/cmd/*.toml");
}
