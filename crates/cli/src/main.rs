//! `kroupier`: the command line of kroupier (demo, coordinator, describe, watch, assign).

fn main() {
    eprintln!("kroupier: no subcommands yet; see README.md");
    std::process::exit(2);
}
