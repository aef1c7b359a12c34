//! Answering `session/request_permission` by a policy, when no person answers: scripts
//! (`acp chat --prompt --yes`), conformance runs, demo clients.
//!
//! The rule: a policy never grants more than it was asked to. Agents list their options in
//! any order (Qwen lists its "always" options first), so the option is picked by its kind,
//! never by its place:
//!
//! | policy | picks | when the agent offers none of those |
//! | --- | --- | --- |
//! | [`PermissionPolicy::AllowOnce`] | `allow_once` | refuses, as `Refuse` does, and says so ([`PermissionChoice::no_allow_offered`]) |
//! | [`PermissionPolicy::AllowAlways`] | `allow_once`, else `allow_always` | refuses, as `Refuse` does |
//! | [`PermissionPolicy::Refuse`] | `reject_once`, else `reject_always` (refusing more is safe) | answers `cancelled` |
//!
//! ```
//! use acp_client::permission::{PermissionPolicy, choose_permission};
//! use acp_types::v1::{PermissionOption, PermissionOptionKind as Kind};
//!
//! let options = [
//!     PermissionOption::new("always", "Always Allow in project", Kind::AllowAlways),
//!     PermissionOption::new("once", "Allow", Kind::AllowOnce),
//!     PermissionOption::new("no", "Reject", Kind::RejectOnce),
//! ];
//! let choice = choose_permission(&options, PermissionPolicy::AllowOnce);
//! assert_eq!(choice.option, Some(1));
//! assert!(choice.allows);
//! ```

use acp_types::v1::{PermissionOption, PermissionOptionKind, RequestPermissionOutcome};

/// How a client without a person at the keyboard answers a permission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionPolicy {
    /// Refuse: `reject_once`, else `reject_always`, else answer `cancelled`.
    Refuse,
    /// Allow this one action (`allow_once`); an agent that offers no one-time allow is
    /// refused. What a scripting flag such as `--yes` means.
    AllowOnce,
    /// Allow, permanently if the agent offers nothing less: `allow_once`, else
    /// `allow_always`; else refuse. Only for an explicit, separate flag (`--yes-always`).
    AllowAlways,
}

impl PermissionPolicy {
    /// Whether the policy means to grant (either allow policy).
    pub fn allows(self) -> bool {
        !matches!(self, PermissionPolicy::Refuse)
    }
}

/// What [`choose_permission`] picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PermissionChoice {
    /// The index of the option to select; `None`: answer `cancelled` (no option fits).
    pub option: Option<usize>,
    /// Whether the selected option grants the action (`allow_once` or `allow_always`).
    pub allows: bool,
    /// The policy meant to allow, but the agent offered no option it may pick (no
    /// `allow_once` for [`PermissionPolicy::AllowOnce`]), so the request is refused: a client
    /// should say why.
    pub no_allow_offered: bool,
}

impl PermissionChoice {
    /// The answer to send: the chosen option selected, or `cancelled`.
    pub fn outcome(&self, options: &[PermissionOption]) -> RequestPermissionOutcome {
        match self.option.and_then(|i| options.get(i)) {
            Some(option) => RequestPermissionOutcome::selected(option.option_id.clone()),
            None => RequestPermissionOutcome::Cancelled,
        }
    }
}

/// Picks the option `policy` answers with among the agent's `options` (see the module docs
/// for the rule). Never grants more than the policy allows, whatever the options' order.
pub fn choose_permission(
    options: &[PermissionOption],
    policy: PermissionPolicy,
) -> PermissionChoice {
    let find = |kinds: &[PermissionOptionKind]| {
        kinds
            .iter()
            .find_map(|kind| options.iter().position(|o| &o.kind == kind))
    };
    let allow: &[PermissionOptionKind] = match policy {
        PermissionPolicy::Refuse => &[],
        PermissionPolicy::AllowOnce => &[PermissionOptionKind::AllowOnce],
        PermissionPolicy::AllowAlways => &[
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
        ],
    };
    if let Some(i) = find(allow) {
        return PermissionChoice {
            option: Some(i),
            allows: true,
            no_allow_offered: false,
        };
    }
    PermissionChoice {
        option: find(&[
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways,
        ]),
        allows: false,
        no_allow_offered: policy.allows(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionOptionKind as K;

    fn options(kinds: &[K]) -> Vec<PermissionOption> {
        kinds
            .iter()
            .enumerate()
            .map(|(i, k)| PermissionOption::new(format!("o{i}"), format!("option {i}"), k.clone()))
            .collect()
    }

    fn pick(kinds: &[K], policy: PermissionPolicy) -> (Option<usize>, bool, bool) {
        let c = choose_permission(&options(kinds), policy);
        (c.option, c.allows, c.no_allow_offered)
    }

    /// Issue 32: Qwen lists its "always" options first; `--yes` granted "Always Allow".
    #[test]
    fn allow_once_is_picked_by_kind_whatever_the_order() {
        let qwen = [K::AllowAlways, K::AllowOnce, K::RejectAlways, K::RejectOnce];
        assert_eq!(
            pick(&qwen, PermissionPolicy::AllowOnce),
            (Some(1), true, false)
        );
        assert_eq!(
            pick(&qwen, PermissionPolicy::AllowAlways),
            (Some(1), true, false)
        );
        assert_eq!(
            pick(&qwen, PermissionPolicy::Refuse),
            (Some(3), false, false)
        );
    }

    #[test]
    fn without_a_one_time_allow_only_the_always_policy_grants() {
        let always_only = [K::AllowAlways, K::RejectAlways];
        assert_eq!(
            pick(&always_only, PermissionPolicy::AllowOnce),
            (Some(1), false, true)
        );
        assert_eq!(
            pick(&always_only, PermissionPolicy::AllowAlways),
            (Some(0), true, false)
        );
    }

    #[test]
    fn a_refusal_falls_back_to_reject_always_then_cancelled() {
        assert_eq!(
            pick(&[K::AllowOnce, K::RejectAlways], PermissionPolicy::Refuse),
            (Some(1), false, false)
        );
        let nothing_to_refuse_with = options(&[K::AllowOnce, K::Unknown("maybe".into())]);
        let c = choose_permission(&nothing_to_refuse_with, PermissionPolicy::Refuse);
        assert_eq!(c.option, None);
        assert_eq!(
            c.outcome(&nothing_to_refuse_with),
            RequestPermissionOutcome::Cancelled
        );
        let c = choose_permission(&[], PermissionPolicy::AllowOnce);
        assert_eq!((c.option, c.no_allow_offered), (None, true));
    }
}
