//! opencode's error class names (`data.errorName` of its JSON-RPC errors).

use crate::observation::ErrorKind;

/// opencode 1.18.33 error class names (`data.errorName` of its JSON-RPC errors; the
/// `NamedError` / `TaggedErrorClass` names in its binary) that decide a kind; `APIError` and
/// `UnknownError` wrap anything and decide nothing.
pub(in crate::classify) fn opencode_error_kind(name: &str) -> Option<ErrorKind> {
    Some(match name {
        "ContextOverflowError" | "ProviderModelNotFoundError" | "ModelNotFoundError" => {
            ErrorKind::InvalidRequest
        }
        "ProviderAuthError" | "ACPAuthRequiredError" => ErrorKind::Authentication,
        "MessageAbortedError" => ErrorKind::Cancelled,
        "SessionNotFoundError" | "ACPSessionNotFoundError" => ErrorKind::SessionExpired,
        _ => return None,
    })
}
