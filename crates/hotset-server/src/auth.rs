//! The server's password, one check for every interface.
//!
//! Owns: comparing a password a client gave with the configured one (in time independent
//! of where they differ), and the HTTP side of it: the layer that answers `401` with a
//! `WWW-Authenticate` challenge unless a request carries the password as
//! `Authorization: Bearer <password>` or Basic (`default:<password>`, or an empty user
//! name, as Redis' default user). Never: let an HTTP route through without it when a
//! password is set, except `/health` (load balancers probe it) and `/metrics` when
//! `metrics_public` says so.

use crate::state::ServerState;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use std::sync::Arc;

/// The user name Redis gives the password of `requirepass` / `AUTH <password>`.
pub const DEFAULT_USER: &str = "default";

/// Whether `given` is the configured password. The time taken depends on the lengths only,
/// not on how many leading bytes match, so it cannot be guessed byte by byte.
pub fn password_matches(expected: &str, given: &[u8]) -> bool {
    let expected = expected.as_bytes();
    let differing = expected.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    // A length mismatch fails too; the loop above still ran over the shorter one.
    differing == 0 && expected.len() == given.len()
}

/// Whether an `Authorization` header carries the password (Bearer, or Basic with the
/// default or an empty user name).
fn authorized(expected: &str, header: &HeaderValue) -> bool {
    let Ok(text) = header.to_str() else { return false };
    let (scheme, credentials) = text.trim().split_once(' ').unwrap_or((text, ""));
    let credentials = credentials.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return password_matches(expected, credentials.as_bytes());
    }
    if !scheme.eq_ignore_ascii_case("basic") {
        return false;
    }
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(credentials) else { return false };
    let Some(colon) = decoded.iter().position(|&b| b == b':') else { return false };
    let (user, password) = (&decoded[..colon], &decoded[colon + 1..]);
    (user.is_empty() || user == DEFAULT_USER.as_bytes()) && password_matches(expected, password)
}

/// Routes anyone may call while a password is set.
fn open_route(state: &ServerState, path: &str) -> bool {
    path == "/health" || (path == "/metrics" && state.config.metrics_public)
}

/// The HTTP layer: requests without the password get `401` and a challenge naming both
/// schemes, in the API's error shape.
pub async fn require_password(State(state): State<Arc<ServerState>>, request: Request, next: Next) -> Response {
    let Some(expected) = &state.config.password else { return next.run(request).await };
    let allowed = open_route(&state, request.uri().path())
        || request.headers().get(header::AUTHORIZATION).is_some_and(|value| authorized(expected, value));
    if allowed {
        return next.run(request).await;
    }
    let body = serde_json::json!({
        "error": "authentication required: send the server's password as 'Authorization: Bearer <password>' or Basic",
        "code": hotset_core::error::ErrorCode::Auth.as_str(),
    });
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"hotset\", Basic realm=\"hotset\""));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_match_exactly() {
        assert!(password_matches("s3cret", b"s3cret"));
        for wrong in [&b"s3cre"[..], b"s3cret!", b"S3cret", b"", b"s3creu"] {
            assert!(!password_matches("s3cret", wrong), "{wrong:?}");
        }
        assert!(password_matches("", b""));
    }

    #[test]
    fn authorization_headers_carry_the_password_as_bearer_or_basic() {
        let basic =
            |credentials: &str| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
        let header = |text: &str| HeaderValue::from_str(text).unwrap();
        for good in ["Bearer pw:1", "bearer  pw:1 ", &basic("default:pw:1"), &basic(":pw:1"), &basic("default:pw:1")] {
            assert!(authorized("pw:1", &header(good)), "{good}");
        }
        for bad in ["Bearer pw", "Bearer", "pw:1", "Token pw:1", &basic("alice:pw:1"), &basic("default:pw"), "Basic !!"]
        {
            assert!(!authorized("pw:1", &header(bad)), "{bad}");
        }
    }
}
