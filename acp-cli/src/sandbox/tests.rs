//! Tests of the sandbox module: the environment policy and the bubblewrap plan.

use super::*;

fn os(items: &[&str]) -> Vec<OsString> {
    items.iter().map(OsString::from).collect()
}

fn policy(pass: &[&str]) -> Result<EnvPolicy, String> {
    EnvPolicy::new(&pass.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

#[test]
fn the_default_allow_list_passes_what_programs_need_and_nothing_else() {
    let env = policy(&[]).unwrap();
    for name in [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TERM",
        "XDG_CONFIG_HOME",
    ] {
        assert!(env.allows(name.as_ref()), "{name}");
    }
    for name in [
        "ACP_TOKEN",
        "ACP_STORE",
        "PGPASSWORD",
        "ANTHROPIC_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "HTTPS_PROXY",
        "PATHS",
        "LC",
    ] {
        assert!(!env.allows(name.as_ref()), "{name}");
    }
}

#[test]
fn pass_env_adds_names_and_prefixes_but_never_the_secrets() {
    let env = policy(&["ANTHROPIC_API_KEY", "OPENAI_*", "ACP_*"]).unwrap();
    assert!(env.allows("ANTHROPIC_API_KEY".as_ref()));
    assert!(env.allows("OPENAI_API_KEY".as_ref()));
    assert!(env.allows("OPENAI_BASE_URL".as_ref()));
    assert!(env.allows("ACP_STORE_DURABILITY".as_ref()));
    assert!(!env.allows("ANTHROPIC_BASE_URL".as_ref()));
    assert!(
        !env.allows("ACP_TOKEN".as_ref()),
        "a prefix never reaches it"
    );
    assert!(!env.allows("ACP_STORE".as_ref()));
    let vars = [("ACP_TOKEN", "t"), ("OPENAI_API_KEY", "k"), ("SECRET", "s")]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
    assert_eq!(
        env.filter(vars),
        vec![(OsString::from("OPENAI_API_KEY"), OsString::from("k"))]
    );
}

#[test]
fn pass_env_refuses_the_secrets_and_what_is_not_a_name() {
    for bad in ["ACP_TOKEN", "ACP_STORE"] {
        let e = policy(&[bad]).unwrap_err();
        assert!(e.contains("never reach"), "{e}");
    }
    for bad in ["", "*", "A*B", "A**", "A=B", "*A"] {
        let e = policy(&[bad]).unwrap_err();
        assert!(e.contains("--pass-env"), "{bad}: {e}");
    }
}

/// A scratch directory in the target directory (not under /tmp, which the sandbox
/// replaces).
fn dir(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .unwrap()
        .join("sandbox-unit")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

#[test]
fn with_a_root_per_identity_each_agent_writes_under_its_own_directory_only() {
    let base = dir("per-identity");
    let root = base.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let token = root.join("token");
    std::fs::write(&token, "t").unwrap();
    let hidden = vec![token.clone()];
    let plan = SandboxPlan::new("/usr/bin/bwrap".into(), &root, &hidden).unwrap();
    let sandbox = Sandbox {
        plan,
        hidden,
        per_identity: true,
    };
    let agent = AgentCommand::new("agent");
    let command = sandbox.wrap(&agent, &Identity("alice".into()));
    let alice = std::fs::canonicalize(root.join("alice")).expect("alice's root is made");
    let args: Vec<String> = command
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let bind = args
        .iter()
        .position(|a| a == "--bind")
        .expect("a writable bind");
    assert_eq!(args[bind + 1], alice.to_string_lossy(), "{args:?}");
    assert!(
        args.iter()
            .all(|a| a != &root.canonicalize().unwrap().to_string_lossy()),
        "the whole root is not bound: {args:?}"
    );
    let refused = sandbox.wrap(&agent, &Identity("../bob".into()));
    assert!(
        refused
            .program
            .to_string_lossy()
            .starts_with("/nonexistent/"),
        "an identity that cannot be a directory gets no agent: {:?}",
        refused.program
    );
    assert!(!base.join("bob").exists());
}

#[test]
fn the_argv_binds_the_root_writable_over_a_read_only_host_and_masks_after_it() {
    let base = dir("argv");
    let root = base.join("root");
    let keys = base.join("home/.ssh");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&keys).unwrap();
    let token = root.join("token");
    std::fs::write(&token, "t").unwrap();
    let missing = base.join("home/.aws");
    let plan = SandboxPlan::new(
        "/usr/bin/bwrap".into(),
        &root,
        &[keys.clone(), token.clone(), missing],
    )
    .unwrap();
    assert_eq!(
        plan.hidden,
        vec![Masked::Dir(keys.clone()), Masked::File(token.clone())],
        "a missing path has nothing to hide"
    );
    let argv = plan.argv("agent".as_ref(), &os(&["--acp", "x y"]));
    let (r, k, t) = (
        root.to_str().unwrap(),
        keys.to_str().unwrap(),
        token.to_str().unwrap(),
    );
    let want = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--bind",
        r,
        r,
        "--tmpfs",
        k,
        "--remount-ro",
        k,
        "--ro-bind",
        "/dev/null",
        t,
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--chdir",
        r,
        "--",
        "agent",
        "--acp",
        "x y",
    ];
    assert_eq!(argv, os(&want));
    assert!(
        !argv
            .iter()
            .any(|a| a == "--share-net" || a == "--unshare-net")
    );
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn wrap_runs_bwrap_with_the_same_environment_and_an_absolute_program() {
    let base = dir("wrap");
    let plan = SandboxPlan::new("/usr/bin/bwrap".into(), &base, &[]).unwrap();
    let agent = AgentCommand::new("./bin/agent")
        .arg("--stdio")
        .env("PATH", "/usr/bin")
        .env_clear();
    let wrapped = plan.wrap(&agent);
    assert_eq!(wrapped.program, "/usr/bin/bwrap");
    assert!(wrapped.env_clear);
    assert!(wrapped.new_session, "no controlling terminal");
    assert_eq!(wrapped.env, agent.env);
    let dashdash = wrapped.args.iter().position(|a| a == "--").unwrap();
    let program = Path::new(&wrapped.args[dashdash + 1]);
    assert!(program.is_absolute(), "{program:?}");
    assert!(program.ends_with("bin/agent"));
    assert_eq!(wrapped.args[dashdash + 2], "--stdio");
    // A bare name is looked up on PATH inside the sandbox.
    let bare = plan.wrap(&AgentCommand::new("claude-code-acp"));
    assert_eq!(bare.args.last().unwrap(), "claude-code-acp");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn an_agent_under_the_scratch_directory_stays_visible_read_only() {
    let base = dir("scratch");
    let plan = SandboxPlan::new("/usr/bin/bwrap".into(), &base, &[]).unwrap();
    let argv = plan.argv("/tmp/tools/agent".as_ref(), &[]);
    let joined: Vec<_> = argv.iter().map(|a| a.to_string_lossy()).collect();
    let at = joined.iter().position(|a| a == "/tmp/tools/agent").unwrap();
    assert_eq!(joined[at - 1], "--ro-bind");
    assert_eq!(joined[at + 1], "/tmp/tools/agent");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_root_that_is_slash_missing_a_file_or_inside_a_hidden_path_is_refused() {
    let base = dir("refused");
    let bwrap = PathBuf::from("/usr/bin/bwrap");
    let e = SandboxPlan::new(bwrap.clone(), Path::new("/"), &[]).unwrap_err();
    assert!(e.contains("write everywhere"), "{e}");
    let e = SandboxPlan::new(bwrap.clone(), &base.join("nope"), &[]).unwrap_err();
    assert!(e.contains("served root"), "{e}");
    let file = base.join("file");
    std::fs::write(&file, "").unwrap();
    let e = SandboxPlan::new(bwrap.clone(), &file, &[]).unwrap_err();
    assert!(e.contains("not a directory"), "{e}");
    let secret = base.join(".ssh");
    std::fs::create_dir_all(secret.join("work")).unwrap();
    let e = SandboxPlan::new(bwrap, &secret.join("work"), &[secret]).unwrap_err();
    assert!(e.contains("hides"), "{e}");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn the_default_hidden_paths_cover_the_usual_credentials() {
    let hidden = default_hidden(Some(Path::new("/home/u")));
    for path in [
        "/home/u/.ssh",
        "/home/u/.aws",
        "/home/u/.config/gcloud",
        "/home/u/.netrc",
        "/home/u/.pgpass",
        "/home/u/.docker",
        "/home/u/.kube",
        "/etc/shadow",
    ] {
        assert!(hidden.contains(&PathBuf::from(path)), "{path}");
    }
    assert!(
        !default_hidden(None)
            .iter()
            .any(|p| p.starts_with("/home/u"))
    );
}
