//! Protocol version helpers.

use super::ProtocolVersion;

impl ProtocolVersion {
    /// Version 1, the stable protocol this module describes.
    pub const V1: Self = Self(1);
    /// The newest version this module speaks.
    pub const LATEST: Self = Self::V1;

    /// The version an agent answers to an `initialize` that asked for `requested`: the same
    /// version if it is supported, otherwise the latest one we support (the client then decides
    /// whether it can continue).
    pub fn negotiate(requested: Self, supported: &[Self]) -> Self {
        if supported.contains(&requested) {
            requested
        } else {
            supported
                .iter()
                .max_by_key(|v| v.0)
                .cloned()
                .unwrap_or(Self::LATEST)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_a_supported_version_and_otherwise_offers_the_latest() {
        assert_eq!(
            ProtocolVersion::negotiate(ProtocolVersion(1), &[ProtocolVersion::V1]),
            ProtocolVersion::V1
        );
        assert_eq!(
            ProtocolVersion::negotiate(ProtocolVersion(9), &[ProtocolVersion::V1]),
            ProtocolVersion::V1
        );
        assert_eq!(
            ProtocolVersion::negotiate(ProtocolVersion(0), &[]),
            ProtocolVersion::LATEST
        );
    }
}
