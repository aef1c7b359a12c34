//! How an entry is launched here, and what the user is told before it is.

use super::*;

fn entry(json: &str) -> AgentEntry {
    serde_json::from_str(json).unwrap()
}

const BOTH: &str = r#"{"id": "both", "name": "Both", "version": "1.0.0", "description": "d",
    "distribution": {
        "binary": {"linux-x86_64": {"archive": "https://h/a.tar.gz", "cmd": "./a", "args": ["acp"]}},
        "npx": {"package": "@s/a@1.0.0", "args": ["--acp"]},
        "uvx": {"package": "a-py"}}}"#;

#[test]
fn the_platforms_archive_comes_first_then_npx_then_uvx() {
    let both = entry(BOTH);
    assert_eq!(both.launch("linux-x86_64").unwrap().kind(), "binary");
    assert_eq!(both.launch("darwin-aarch64").unwrap().kind(), "npx");
    let mut uvx_only = both.clone();
    uvx_only.distribution.binary.clear();
    uvx_only.distribution.npx = None;
    assert_eq!(uvx_only.launch("linux-x86_64").unwrap().kind(), "uvx");
    let mut other_platform = both.clone();
    other_platform.distribution.npx = None;
    other_platform.distribution.uvx = None;
    assert!(other_platform.launch("windows-x86_64").is_none());
    assert_eq!(other_platform.binary_platforms(), "linux-x86_64");
}

#[test]
fn the_description_names_what_is_downloaded_and_where() {
    let both = entry(BOTH);
    let cache = Cache::new("/tmp/acp-cache-test");
    let binary = both.launch("linux-x86_64").unwrap().describe(&both, &cache);
    assert!(binary.contains("https://h/a.tar.gz"), "{binary}");
    assert!(
        binary.contains("/tmp/acp-cache-test/agents/both/"),
        "{binary}"
    );
    assert!(binary.contains("no checksum"), "{binary}");
    let npx = both
        .launch("darwin-aarch64")
        .unwrap()
        .describe(&both, &cache);
    assert!(npx.contains("npx --yes @s/a@1.0.0 --acp"), "{npx}");
}

#[test]
fn an_archive_not_installed_yet_is_not_runnable() {
    let both = entry(BOTH);
    let cache = Cache::new(std::env::temp_dir().join("acp-registry-empty-cache"));
    let e = both
        .launch("linux-x86_64")
        .unwrap()
        .command(&both, &cache)
        .unwrap_err();
    assert!(matches!(e, RegistryError::NotInstalled(_)), "{e}");
}

#[test]
fn the_environment_goes_in_front_through_env() {
    let command = AgentCommand {
        program: "/c/a".into(),
        args: vec!["acp".into()],
        env: [("K".to_owned(), "v".to_owned())].into(),
    };
    let argv: Vec<String> = command
        .argv()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(argv, ["env", "K=v", "/c/a", "acp"]);
}
