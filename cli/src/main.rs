//! The `resumable` command line: replay scenarios through the kernel (more commands follow).
fn main() {
    eprintln!("resumable: no command is available yet; see README.md");
    std::process::exit(2);
}
