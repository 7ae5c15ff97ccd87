//! A hostile plugin, for the sandbox tests only (never shipped as an example).
//!
//! Every tool takes what to attack from its arguments, the way a model
//! steered by untrusted content would: a path, a variable name, an address.
//! Each one reports exactly what it got, or the error the sandbox gave it,
//! so the tests can check both the refusals and the grants.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::{NoArgs, Plugin, Tool};

#[derive(Deserialize, JsonSchema)]
struct PathArgs {
    /// Any path, absolute or relative.
    path: String,
}

fn read_file(args: PathArgs) -> Result<String, String> {
    std::fs::read_to_string(&args.path).map_err(|e| format!("cannot read {}: {e}", args.path))
}

fn list_dir(args: PathArgs) -> Result<String, String> {
    let entries = std::fs::read_dir(&args.path).map_err(|e| format!("cannot list {}: {e}", args.path))?;
    let mut names: Vec<String> = entries
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("cannot list {}: {e}", args.path))?;
    names.sort();
    Ok(names.join("\n"))
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    path: String,
    content: String,
}

fn write_file(args: WriteArgs) -> Result<String, String> {
    std::fs::write(&args.path, &args.content).map_err(|e| format!("cannot write {}: {e}", args.path))?;
    Ok(format!("wrote {} bytes to {}", args.content.len(), args.path))
}

fn delete_file(args: PathArgs) -> Result<String, String> {
    std::fs::remove_file(&args.path).map_err(|e| format!("cannot delete {}: {e}", args.path))?;
    Ok(format!("deleted {}", args.path))
}

#[derive(Deserialize, JsonSchema)]
struct SymlinkArgs {
    /// What the link points to.
    target: String,
    /// Where to create the link.
    link: String,
}

unsafe extern "C" {
    /// wasi-libc's `symlink` (std's wrapper for WASI is unstable).
    fn symlink(target: *const std::ffi::c_char, link: *const std::ffi::c_char) -> std::ffi::c_int;
}

fn make_symlink(args: SymlinkArgs) -> Result<String, String> {
    let fail = |e: std::io::Error| format!("cannot link {} -> {}: {e}", args.link, args.target);
    let target = std::ffi::CString::new(args.target.clone()).map_err(|e| fail(std::io::Error::other(e)))?;
    let link = std::ffi::CString::new(args.link.clone()).map_err(|e| fail(std::io::Error::other(e)))?;
    // SAFETY: both are valid NUL-terminated strings that outlive the call.
    if unsafe { symlink(target.as_ptr(), link.as_ptr()) } != 0 {
        return Err(fail(std::io::Error::last_os_error()));
    }
    Ok(format!("linked {} -> {}", args.link, args.target))
}

#[derive(Deserialize, JsonSchema)]
struct EnvArgs {
    /// A variable name.
    name: String,
}

fn env_var(args: EnvArgs) -> Result<String, String> {
    std::env::var(&args.name).map_err(|e| format!("cannot read ${}: {e}", args.name))
}

/// Every variable the plugin sees, as NAME=value lines, and its arguments.
fn env_all(_: NoArgs) -> String {
    let mut lines: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
    lines.sort();
    lines.push(format!("args={:?}", std::env::args().collect::<Vec<_>>()));
    lines.join("\n")
}

#[derive(Deserialize, JsonSchema)]
struct ConnectArgs {
    /// HOST:PORT, a name or an address.
    address: String,
    /// Sent once connected.
    #[serde(default)]
    send: String,
}

/// Connects over TCP, sends `send`, and returns everything the peer wrote.
fn connect(args: ConnectArgs) -> Result<String, String> {
    let mut stream =
        TcpStream::connect(&args.address).map_err(|e| format!("cannot connect to {}: {e}", args.address))?;
    if !args.send.is_empty() {
        stream
            .write_all(args.send.as_bytes())
            .map_err(|e| format!("cannot send to {}: {e}", args.address))?;
    }
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|e| format!("cannot read from {}: {e}", args.address))?;
    Ok(answer)
}

#[derive(Deserialize, JsonSchema)]
struct ResolveArgs {
    /// A DNS name.
    name: String,
}

/// Resolves a name with the guest's own lookup.
fn resolve(args: ResolveArgs) -> Result<String, String> {
    let addrs = (args.name.as_str(), 0)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", args.name))?;
    let mut ips: Vec<String> = addrs.map(|a| a.ip().to_string()).collect();
    ips.sort();
    ips.dedup();
    Ok(ips.join("\n"))
}

#[derive(Deserialize, JsonSchema)]
struct PrintArgs {
    /// Written to stdout as is (try a JSON-RPC message).
    text: String,
}

/// Writes to stdout and stderr, trying to inject into the protocol stream.
fn print_stdout(args: PrintArgs) -> String {
    let mut out = std::io::stdout();
    let _ = out.write_all(args.text.as_bytes());
    let _ = out.flush();
    let first_line: String = args.text.lines().next().unwrap_or_default().chars().take(80).collect();
    eprintln!("hostile stderr: {first_line}");
    "printed".into()
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("read_file", read_file).description("Reads a file"))
        .tool(Tool::new("list_dir", list_dir).description("Lists a directory"))
        .tool(Tool::new("write_file", write_file).description("Writes a file"))
        .tool(Tool::new("delete_file", delete_file).description("Deletes a file"))
        .tool(Tool::new("make_symlink", make_symlink).description("Creates a symbolic link"))
        .tool(Tool::new("env_var", env_var).description("Reads an environment variable"))
        .tool(Tool::new("env_all", env_all).description("Lists the environment and arguments"))
        .tool(Tool::new("connect", connect).description("Connects to HOST:PORT over TCP"))
        .tool(Tool::new("resolve", resolve).description("Resolves a DNS name"))
        .tool(Tool::new("print_stdout", print_stdout).description("Prints to stdout and stderr"))
}

wasm_mcp_sdk::export!(plugin);
