//! `acp-interop`: the interop matrix driver, the recording tap and the Rust peers, in one
//! binary (one link step; the driver finds the peers at its own path).
//!
//! ```text
//! acp-interop matrix [--cache <dir>] [--out <dir>] [--keep] [--rust-only] [<cell>...]
//! acp-interop tap --wire <file> --stderr <file> -- <agent command...>
//! acp-interop ours-agent | rust-agent [--protocol 1|2|both] [--report <file>]
//! acp-interop ours-client | rust-client [--protocol 1|2|both] --cwd <workspace> -- <agent command...>
//! acp-interop ours-client | rust-client --cwd <workspace> --url <url> --token <token>
//! acp-interop ours-server | rust-server --listen <addr> [--token <token>] -- <agent command...>
//! acp-interop ours-conductor | rust-conductor --chain <file: a JSON list of command lines>
//! acp-interop ours-proxy | rust-proxy
//! ```

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use acp_interop::peers::ours_v2::Versions;
use acp_interop::peers::remote::{AgentTarget, ServerArgs};
use acp_interop::report::Reporter;
use acp_interop::{matrix, peers, tap};

const USAGE: &str = "usage:
  acp-interop matrix [--cache <dir>] [--out <dir>] [--keep] [--rust-only] [<cell>...]
  acp-interop tap --wire <file> --stderr <file> -- <agent command...>
  acp-interop ours-agent | rust-agent [--protocol 1|2|both] [--report <file>]
  acp-interop ours-client | rust-client [--protocol 1|2|both] --cwd <workspace> -- <agent command...>
  acp-interop ours-client | rust-client --cwd <workspace> --url <url> --token <token>
  acp-interop ours-server | rust-server --listen <addr> [--token <token>] -- <agent command...>
  acp-interop ours-conductor | rust-conductor --chain <file: a JSON list of command lines>
  acp-interop ours-proxy | rust-proxy";

/// A leading `--protocol 1|2|both` (the v2 and negotiation cells; default 1) and the rest.
fn protocol(args: &[OsString]) -> Result<(Versions, &[OsString]), String> {
    match args {
        [flag, value, rest @ ..] if flag == "--protocol" => {
            Versions::parse(&value.to_string_lossy()).map(|v| (v, rest))
        }
        _ => Ok((Versions::V1, args)),
    }
}

/// `--report <file>` of an agent.
fn agent_report(args: &[OsString]) -> Result<Reporter, String> {
    match args {
        [] => Ok(Reporter::file(None)),
        [flag, path] if flag == "--report" => Ok(Reporter::file(Some(PathBuf::from(path)))),
        _ => Err(format!("unexpected agent arguments {args:?}\n{USAGE}")),
    }
}

/// `--cwd <dir> -- <command...>` (or `--cwd <dir> --url <url> --token <token>`) of a client.
fn client_args(args: &[OsString]) -> Result<(PathBuf, AgentTarget), String> {
    match args {
        [flag, cwd, rest @ ..] if flag == "--cwd" => AgentTarget::parse(rest)
            .map(|target| (PathBuf::from(cwd), target))
            .map_err(|e| format!("{e}\n{USAGE}")),
        _ => Err(format!("unexpected client arguments {args:?}\n{USAGE}")),
    }
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("acp-interop: {message}");
    ExitCode::FAILURE
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        return fail(USAGE);
    };
    match command.to_str().unwrap_or_default() {
        "matrix" => match matrix::Options::parse(rest) {
            Ok(options) => matrix::main(options),
            Err(e) => fail(format!("{e}\n{USAGE}")),
        },
        "tap" => match tap::TapArgs::parse(rest) {
            Ok(args) => {
                let code = runtime().block_on(tap::run(args));
                ExitCode::from(u8::try_from(code).unwrap_or(1))
            }
            Err(e) => fail(e),
        },
        "ours-agent" => match protocol(rest).and_then(|(v, rest)| Ok((v, agent_report(rest)?))) {
            Ok((versions, report)) => {
                runtime().block_on(peers::ours_v2::run_agent(report, versions));
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        "rust-agent" => match protocol(rest).and_then(|(v, rest)| Ok((v, agent_report(rest)?))) {
            Ok((versions, report)) => {
                let served = match versions {
                    Versions::V1 => runtime().block_on(peers::official_agent::run(report)),
                    Versions::V2 => runtime().block_on(peers::official_v2::run_agent(report)),
                    Versions::Both => {
                        return fail(
                            "rust-agent: the official crate has no agent speaking both versions",
                        );
                    }
                };
                match served {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(format!("rust-agent: {e}")),
                }
            }
            Err(e) => fail(e),
        },
        "ours-client" => match protocol(rest).and_then(|(v, rest)| Ok((v, client_args(rest)?))) {
            Ok((versions, (cwd, cmd))) => {
                match runtime().block_on(peers::ours_v2::run_client(cwd, cmd, versions)) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(format!("ours-client: {e}")),
                }
            }
            Err(e) => fail(e),
        },
        "rust-client" => match protocol(rest).and_then(|(v, rest)| Ok((v, client_args(rest)?))) {
            Ok((versions, (cwd, cmd))) => {
                let ran = match versions {
                    Versions::V1 => runtime().block_on(peers::official_client::run(cwd, cmd)),
                    Versions::V2 => runtime().block_on(peers::official_v2::run_client(cwd, cmd)),
                    Versions::Both => {
                        return fail(
                            "rust-client: the official crate has no client speaking both versions",
                        );
                    }
                };
                match ran {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(format!("rust-client: {e}")),
                }
            }
            Err(e) => fail(e),
        },
        "ours-server" | "rust-server" => match ServerArgs::parse(rest) {
            Ok(args) => {
                let served = if command == "ours-server" {
                    runtime().block_on(peers::remote::ours_server(args))
                } else {
                    runtime().block_on(peers::remote::rust_server(args))
                };
                match served {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(format!("{}: {e}", command.to_string_lossy())),
                }
            }
            Err(e) => fail(format!("{e}\n{USAGE}")),
        },
        "ours-conductor" | "rust-conductor" => {
            let chain = match rest {
                [flag, file] if flag == "--chain" => {
                    peers::chain::read_chain(std::path::Path::new(file))
                }
                _ => Err(format!("unexpected conductor arguments {rest:?}\n{USAGE}")),
            };
            match chain {
                Ok(chain) => {
                    let code = if command == "ours-conductor" {
                        runtime().block_on(peers::chain::ours_conductor(chain))
                    } else {
                        runtime().block_on(peers::chain::rust_conductor(chain))
                    };
                    ExitCode::from(u8::try_from(code).unwrap_or(1))
                }
                Err(e) => fail(e),
            }
        }
        "ours-proxy" | "rust-proxy" if rest.is_empty() => {
            let code = if command == "ours-proxy" {
                runtime().block_on(peers::chain::ours_proxy())
            } else {
                runtime().block_on(peers::chain::rust_proxy())
            };
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => fail(format!("unknown command {other:?}\n{USAGE}")),
    }
}
