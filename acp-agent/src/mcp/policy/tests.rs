//! The policy's checks: commands, environments, addresses in every spelling, URL prefixes.

use super::*;
use crate::types::{EnvVariable, McpServerHttp, McpServerStdio};

fn refused(url: &str) -> bool {
    McpPolicy::new().check_url_now(url).is_err()
}

#[test]
fn addresses_are_classified() {
    let cases = [
        ("127.0.0.1", Some("loopback")),
        ("127.255.0.9", Some("loopback")),
        ("0.0.0.0", Some("unspecified")),
        ("10.1.2.3", Some("private")),
        ("172.16.0.1", Some("private")),
        ("172.31.255.255", Some("private")),
        ("172.32.0.1", None),
        ("192.168.1.1", Some("private")),
        ("169.254.169.254", Some("link-local")),
        ("100.64.0.1", Some("shared (CGNAT)")),
        ("100.128.0.1", None),
        ("224.0.0.1", Some("multicast")),
        ("255.255.255.255", Some("broadcast")),
        ("240.0.0.1", Some("reserved")),
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("::", Some("unspecified")),
        ("::1", Some("loopback")),
        ("fe80::1", Some("link-local")),
        ("febf::1", Some("link-local")),
        ("fc00::1", Some("private")),
        ("fd12:3456::1", Some("private")),
        ("ff02::1", Some("multicast")),
        ("::ffff:127.0.0.1", Some("loopback")),
        ("::ffff:169.254.169.254", Some("link-local")),
        ("::ffff:8.8.8.8", None),
        ("::127.0.0.1", Some("loopback")),
        ("64:ff9b::10.0.0.1", Some("private")),
        ("2002:7f00:1::", Some("loopback")),
        ("2001:4860:4860::8888", None),
    ];
    for (ip, kind) in cases {
        let ip: IpAddr = ip.parse().unwrap();
        assert_eq!(refused_address(ip), kind, "{ip}");
    }
}

#[test]
fn every_spelling_of_a_refused_address_is_refused() {
    for url in [
        "http://127.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::1]:8080/mcp",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://127.0.0.1./",
        "HTTP://127.0.0.1/",
        "http://LOCALHOST/",
        "http://localhost./",
        "http://a.localhost/",
        "http://good.example@127.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "http://0/",
        "file:///etc/passwd",
        "ftp://example.com/",
        "not a url",
    ] {
        assert!(refused(url), "{url} passed");
    }
    for url in [
        "https://mcp.example.com/",
        "http://8.8.8.8/",
        "http://127.0.0.1.example.com/",
    ] {
        assert!(!refused(url), "{url} refused");
    }
}

#[test]
fn prefixes_match_the_parsed_url() {
    let policy = McpPolicy::new()
        .allow_url("http://127.0.0.1:9000/mcp")
        .unwrap()
        .allow_url("https://good.example/")
        .unwrap();
    let ok = |u: &str| policy.allowed(&Url::parse(u).unwrap());
    assert!(ok("http://127.0.0.1:9000/mcp"));
    assert!(ok("http://127.0.0.1:9000/mcp/tools"));
    assert!(ok("HTTP://127.0.0.1:9000/mcp"));
    assert!(ok("http://2130706433:9000/mcp"));
    assert!(ok("http://127.0.0.1:9000/x/../mcp"));
    assert!(!ok("http://127.0.0.1:9000/mcpx"));
    assert!(!ok("http://127.0.0.1:9000/"));
    assert!(!ok("http://127.0.0.1:9001/mcp"));
    assert!(!ok("http://127.0.0.1:9000/mcp/../admin"));
    assert!(!ok("https://127.0.0.1:9000/mcp"));
    assert!(ok("https://good.example/anything"));
    assert!(ok("https://GOOD.example./x"));
    assert!(ok("https://good.example:443/x"));
    assert!(ok("https://user:pw@good.example/x"));
    assert!(!ok("https://good.example@evil.example/"));
    assert!(!ok("https://good.example.evil.example/"));
    assert!(!ok("https://evil.example/https://good.example/"));
    assert!(!ok("http://good.example/"));
    assert!(!ok("https://good.example:8443/"));
}

#[test]
fn unusable_prefixes_are_refused() {
    for bad in [
        "127.0.0.1:9000",
        "file:///tmp/",
        "http://user@good.example/",
        "http://good.example/?q",
        "nonsense",
    ] {
        assert!(
            matches!(McpPolicy::new().allow_url(bad), Err(PolicyError::Config(_))),
            "{bad}"
        );
    }
}

fn stdio(command: &str, env: &[(&str, &str)]) -> McpServer {
    let env = env.iter().map(|(k, v)| EnvVariable::new(*k, *v));
    McpServer::Stdio(McpServerStdio::new(
        "x",
        command,
        vec!["-c".to_owned()],
        env,
    ))
}

#[tokio::test]
async fn stdio_servers_need_an_allowed_command() {
    let err = McpPolicy::new()
        .check(&[stdio("/bin/sh", &[])])
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("\"x\""), "{text}");
    assert!(text.contains("--mcp-allow-command /bin/sh"), "{text}");
    assert_eq!(err.to_error().code, acp_rpc::ErrorCode::INVALID_PARAMS);
    let policy = McpPolicy::new().allow_command("/usr/bin/mcp-fs");
    policy
        .check(&[stdio("/usr/bin/mcp-fs", &[("TOKEN", "t")])])
        .await
        .unwrap();
    assert!(policy.check(&[stdio("mcp-fs", &[])]).await.is_err());
    assert!(
        policy
            .check(&[stdio("/usr/bin/./mcp-fs", &[])])
            .await
            .is_err()
    );
    for var in [
        "LD_PRELOAD",
        "ld_library_path",
        "DYLD_INSERT_LIBRARIES",
        "NODE_OPTIONS",
    ] {
        let refused = policy
            .check(&[stdio("/usr/bin/mcp-fs", &[(var, "x")])])
            .await;
        assert!(refused.is_err(), "{var}");
    }
}

#[tokio::test]
async fn http_servers_are_checked_and_counted() {
    let http = |url: &str| McpServer::Http(McpServerHttp::new("web", url, []));
    let policy = McpPolicy::new();
    let err = policy
        .check(&[http("http://127.0.0.1:1/")])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--mcp-allow-url"), "{err}");
    // `localhost` by name, and a name that does not resolve.
    assert!(policy.check(&[http("http://localhost:1/")]).await.is_err());
    let unresolvable = http("http://no-such-host.invalid/");
    let err = policy.check(&[unresolvable]).await.unwrap_err();
    assert!(err.to_string().contains("resolve"), "{err}");
    let allowed = McpPolicy::new().allow_url("http://127.0.0.1:1/").unwrap();
    allowed
        .check(&[http("http://127.0.0.1:1/mcp")])
        .await
        .unwrap();
    let two = [http("http://127.0.0.1:1/"), http("http://127.0.0.1:1/")];
    let err = allowed
        .clone()
        .max_servers(1)
        .check(&two)
        .await
        .unwrap_err();
    assert_eq!(err, PolicyError::TooMany { given: 2, max: 1 });
    assert!(err.to_string().contains("--mcp-max-servers"), "{err}");
}

#[tokio::test]
async fn json_entries_that_are_not_servers_are_refused() {
    let policy = McpPolicy::new();
    let odd = serde_json::json!([{"type": "carrier-pigeon", "name": "p"}]);
    assert!(policy.check_json(&odd).await.is_err());
    assert!(
        policy
            .check_json(&serde_json::json!({"a": 1}))
            .await
            .is_err()
    );
    let acp = serde_json::json!([{"type": "acp", "name": "own", "serverId": "s1"}]);
    policy.check_json(&acp).await.unwrap();
    policy.check_json(&serde_json::json!([])).await.unwrap();
    // Fields another parser would read as another transport.
    let both = serde_json::json!([{"type": "http", "name": "b", "url": "https://8.8.8.8/",
        "headers": [], "command": "/bin/sh", "args": [], "env": []}]);
    let err = policy.check_json(&both).await.unwrap_err();
    assert!(
        err.to_string().contains("both a command and a URL"),
        "{err}"
    );
    let acp_cmd = serde_json::json!([{"type": "acp", "name": "own", "serverId": "s1",
        "command": "/bin/sh"}]);
    assert!(policy.check_json(&acp_cmd).await.is_err());
    let public = serde_json::json!([{"type": "http", "name": "p", "url": "https://8.8.8.8/",
        "headers": []}]);
    policy.check_json(&public).await.unwrap();
    let many = serde_json::json!([{"type": "carrier-pigeon"}, {"type": "carrier-pigeon"}]);
    let err = policy
        .clone()
        .max_servers(1)
        .check_json(&many)
        .await
        .unwrap_err();
    assert_eq!(err, PolicyError::TooMany { given: 2, max: 1 });
}

#[test]
fn connecting_checks_the_address_unless_the_host_is_trusted() {
    let policy = McpPolicy::new()
        .allow_url("http://internal.example:9000/")
        .unwrap();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    assert!(policy.connect_allowed("internal.example.", lo));
    assert!(!policy.connect_allowed("elsewhere.example", lo));
    assert!(policy.connect_allowed("elsewhere.example", "8.8.8.8".parse().unwrap()));
}
