//! Why an upload is refused and the status that says so, and what an upload may take in
//! memory: shared by the dd-trace form, its multipart reader and the other profilers' APIs.

use crate::pprof::Limits;

/// What an upload may take in memory: the network limits of each part, and the bytes all of
/// its parts may take decompressed.
#[derive(Debug, Clone, Copy)]
pub struct UploadLimits {
    pub part: Limits,
    pub decompressed: u64,
}

/// Why an upload is refused, and the status that says so.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Reject {
    #[error("not multipart/form-data: {0}")]
    NotMultipart(String),
    #[error("malformed multipart body: {0}")]
    Malformed(String),
    /// A Pyroscope or OTLP request that is not what its API says.
    #[error("{0}")]
    Invalid(String),
    /// A content type or encoding the endpoint does not take.
    #[error("{0}")]
    Unsupported(String),
    #[error("event.json: {0}")]
    Event(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("attachment {name}: {why}")]
    Attachment { name: String, why: String },
    /// The memory budget of uploads in flight is spent: retry later (503, Retry-After).
    #[error("{0}")]
    Busy(String),
}

impl Reject {
    pub fn status(&self) -> u16 {
        match self {
            Reject::NotMultipart(_) | Reject::Unsupported(_) => 415,
            Reject::TooLarge(_) => 413,
            Reject::Busy(_) => 503,
            _ => 400,
        }
    }

    /// The label of the rejection in /metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Reject::NotMultipart(_) => "not_multipart",
            Reject::Malformed(_) => "malformed_multipart",
            Reject::Invalid(_) => "malformed_request",
            Reject::Unsupported(_) => "unsupported_type",
            Reject::Event(_) => "bad_event",
            Reject::TooLarge(_) => "too_large",
            Reject::Attachment { .. } => "bad_attachment",
            Reject::Busy(_) => "memory_budget",
        }
    }
}

pub(super) fn busy() -> Reject {
    Reject::Busy(
        "the uploads in flight hold the receiver's memory budget (receive.memory_limit_mb); \
         retry later"
            .into(),
    )
}

/// `bytes` more charged to `held` for `what`: a request that could never fit what one upload
/// may hold of the budget is refused as too large (413: retrying cannot help); one that does
/// not fit now, as busy (503 with Retry-After).
pub(super) fn charge(
    held: &mut crate::budget::Reservation,
    bytes: u64,
    what: &str,
) -> Result<(), Reject> {
    if held.grow(bytes) {
        return Ok(());
    }
    if !held.could_ever_grow(bytes) {
        return Err(Reject::TooLarge(format!(
            "{what} would take {} bytes of memory in all, over the {} one large request may \
             hold of the receiver's budget of {} (memory_limit_mb, less the room kept for \
             small uploads)",
            held.bytes().saturating_add(bytes),
            held.large_ceiling(),
            held.total()
        )));
    }
    Err(busy())
}
