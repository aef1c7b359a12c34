//! Tests of the security module: credentials, token files, origins and the rate bucket.

use super::*;
use hyper::header::HeaderValue;

fn with_auth(value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
    h
}

#[test]
fn bearer_token_accepts_only_the_exact_token() {
    let auth = BearerToken::new("s3cret\n").unwrap();
    assert!(auth.authenticate(&with_auth("Bearer s3cret")).is_some());
    assert!(auth.authenticate(&with_auth("Bearer s3cre")).is_none());
    assert!(auth.authenticate(&with_auth("Bearer s3cret2")).is_none());
    assert!(auth.authenticate(&with_auth("Basic s3cret")).is_none());
    assert!(auth.authenticate(&HeaderMap::new()).is_none());
}

#[test]
fn an_empty_token_is_refused() {
    assert!(BearerToken::new("  \n").is_err());
}

fn who(auth: &BearerTokens, token: &str) -> Option<String> {
    auth.authenticate(&with_auth(&format!("Bearer {token}")))
        .map(|i| i.0)
}

fn error(text: &str) -> String {
    match BearerTokens::parse(text) {
        Ok(set) => panic!("{text:?} parsed: {set:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_token_file_names_an_identity_per_line() {
    let text = "# the team\n\nalice:tok-a\n  bob:tok:b  \nshared-one\n\n# end\n";
    let auth = BearerTokens::parse(text).unwrap();
    assert_eq!(who(&auth, "tok-a").as_deref(), Some("alice"));
    // Split at the first colon: a token may hold colons.
    assert_eq!(who(&auth, "tok:b").as_deref(), Some("bob"));
    assert_eq!(who(&auth, "shared-one").as_deref(), Some(Identity::UNNAMED));
    for wrong in ["tok", "tok-a2", "alice:tok-a", "alice", "", "# the team"] {
        assert_eq!(who(&auth, wrong), None, "{wrong:?}");
    }
    assert!(auth.authenticate(&with_auth("Basic tok-a")).is_none());
    assert_eq!(auth.names(), ["alice", "bob"]);
    assert_eq!(auth.len(), 3);
}

#[test]
fn a_file_of_one_bare_token_is_the_unnamed_identity_as_before() {
    let auth = BearerTokens::parse("s3cret\n").unwrap();
    assert_eq!(who(&auth, "s3cret").as_deref(), Some(Identity::UNNAMED));
    assert!(auth.names().is_empty());
    let single = BearerTokens::single(" s3cret\n").unwrap();
    assert_eq!(who(&single, "s3cret").as_deref(), Some(Identity::UNNAMED));
    assert!(BearerTokens::single(" \n").is_err());
}

#[test]
fn malformed_lines_are_named_by_number_without_the_token() {
    let cases = [
        (
            "alice:a\n:secret-x\n",
            "line 2:",
            "name before `:` is empty",
        ),
        ("alice:\n", "line 1:", "token of `alice` is empty"),
        ("alice:   \n", "line 1:", "token of `alice` is empty"),
        ("# c\nal ice:secret-x\n", "line 2:", "character other than"),
        ("al/ice:secret-x\n", "line 1:", "character other than"),
        ("élise:secret-x\n", "line 1:", "character other than"),
        (
            "alice:a\nbob:b\nalice:secret-x\n",
            "line 3:",
            "`alice` is given twice (also on line 1)",
        ),
        (
            "alice:secret-x\n\nbob:secret-x\n",
            "line 3:",
            "same token as on line 1",
        ),
        (
            "secret-x\nbob:secret-x\n",
            "line 2:",
            "same token as on line 1",
        ),
        (
            "secret-x\nsecret-y\n",
            "line 2:",
            "second token without a name (the first is on line 1)",
        ),
        ("bearer:secret-x\n", "line 1:", "`bearer` is reserved"),
        ("anonymous:secret-x\n", "line 1:", "`anonymous` is reserved"),
    ];
    for (text, line, why) in cases {
        let e = error(text);
        assert!(e.starts_with(line), "{text:?}: {e}");
        assert!(e.contains(why), "{text:?}: {e}");
        assert!(!e.contains("secret"), "{text:?}: the token is echoed: {e}");
    }
    for empty in ["", "\n\n", "# only comments\n  # and more\n"] {
        assert!(error(empty).contains("no token"), "{empty:?}");
    }
}

#[test]
fn a_reload_takes_effect_for_the_next_request_and_a_bad_one_keeps_the_old_set() {
    let auth = BearerTokens::parse("alice:tok-a\n").unwrap();
    let shared = auth.clone();
    auth.reload("alice:tok-a2\ncarol:tok-c\n").unwrap();
    assert_eq!(who(&shared, "tok-a"), None);
    assert_eq!(who(&shared, "tok-a2").as_deref(), Some("alice"));
    assert_eq!(who(&shared, "tok-c").as_deref(), Some("carol"));
    let e = auth.reload("alice:tok-a3\nalice:tok-x\n").unwrap_err();
    assert!(e.to_string().starts_with("line 2:"), "{e}");
    assert_eq!(who(&shared, "tok-a2").as_deref(), Some("alice"));
    assert_eq!(who(&shared, "tok-a3"), None);
}

#[test]
fn the_unnamed_identities_own_the_sessions_with_no_owner() {
    assert_eq!(Identity(Identity::UNNAMED.into()).session_owner(), None);
    assert_eq!(Identity(Identity::ANONYMOUS.into()).session_owner(), None);
    assert_eq!(Identity("alice".into()).session_owner(), Some("alice"));
}

#[test]
fn the_token_is_not_printed() {
    let tokens = BearerTokens::parse("alice:s3cret\n").unwrap();
    let shown = format!("{tokens:?}");
    assert!(
        !shown.contains("s3cret") && shown.contains("alice"),
        "{shown}"
    );
    let auth = BearerToken::new("s3cret").unwrap();
    assert!(!format!("{auth:?}").contains("s3cret"));
}
