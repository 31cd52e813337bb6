//! A `multipart/form-data` body read into its parts as it arrives: the boundary of its
//! Content-Type, at most 256 parts, an `event` part within its limit.

use bytes::Bytes;

use super::reject::Reject;

/// The boundary of a `multipart/form-data` content type.
pub fn boundary(content_type: Option<&str>) -> Result<String, Reject> {
    let ct = content_type.ok_or_else(|| Reject::NotMultipart("no Content-Type".into()))?;
    let m: mime::Mime = ct
        .parse()
        .map_err(|_| Reject::NotMultipart(format!("Content-Type {ct:?} does not parse")))?;
    if m.type_() != mime::MULTIPART || m.subtype() != mime::FORM_DATA {
        return Err(Reject::NotMultipart(format!(
            "Content-Type is {}",
            m.essence_str()
        )));
    }
    multer::parse_boundary(ct)
        .map_err(|_| Reject::NotMultipart("multipart/form-data without a boundary".into()))
}

/// One part of the body as it arrived: its name, file name and bytes.
pub(super) struct Field {
    pub(super) name: String,
    pub(super) filename: Option<String>,
    pub(super) data: Bytes,
}

/// The most parts an upload may have.
const MAX_PARTS: usize = 256;

/// Why the parts could not be read: the body's own fault, or the stream's (the body was cut,
/// went past its limit or the budget: the reader of the stream knows which).
pub(super) enum FieldsError {
    Body(Reject),
    Stream,
}

/// The parts of a multipart body, read as its bytes arrive: an `event` part is refused as
/// soon as it passes [`EVENT_LIMIT`], before the rest of the body is sent.
pub(super) async fn fields<S>(stream: S, boundary: String) -> Result<Vec<Field>, FieldsError>
where
    S: futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    let mut mp = multer::Multipart::new(stream, boundary);
    let mut out = Vec::new();
    let failed = |e: multer::Error| match e {
        multer::Error::StreamReadFailed(_) => FieldsError::Stream,
        e => FieldsError::Body(Reject::Malformed(e.to_string())),
    };
    loop {
        let mut field = match mp.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(failed(e)),
        };
        if out.len() == MAX_PARTS {
            return Err(FieldsError::Body(Reject::Malformed(format!(
                "more than {MAX_PARTS} parts"
            ))));
        }
        let name = field.name().unwrap_or_default().to_string();
        let filename = field.file_name().map(str::to_string);
        let limit = if name == "event" {
            EVENT_LIMIT
        } else {
            usize::MAX
        };
        let mut chunks: Vec<Bytes> = Vec::new();
        let mut len = 0usize;
        loop {
            let chunk = match field.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(multer::Error::StreamReadFailed(_)) => return Err(FieldsError::Stream),
                Err(e) => {
                    return Err(FieldsError::Body(Reject::Malformed(format!(
                        "part {name:?}: {e}"
                    ))));
                }
            };
            len += chunk.len();
            if len > limit {
                return Err(FieldsError::Body(event_too_large(len)));
            }
            chunks.push(chunk);
        }
        out.push(Field {
            name,
            filename,
            data: joined(chunks, len),
        });
    }
    if out.is_empty() {
        return Err(FieldsError::Body(Reject::Malformed("no part".into())));
    }
    Ok(out)
}

/// Chunks as one buffer (the one chunk itself when there is one).
fn joined(mut chunks: Vec<Bytes>, len: usize) -> Bytes {
    match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().unwrap_or_default(),
        _ => {
            let mut out = bytes::BytesMut::with_capacity(len);
            for c in chunks {
                out.extend_from_slice(&c);
            }
            out.freeze()
        }
    }
}

pub(super) fn event_too_large(len: usize) -> Reject {
    Reject::Event(format!(
        "more than {EVENT_LIMIT} bytes ({len} so far), over what an event part may take \
         (dd-trace's are a few KB)"
    ))
}

/// The most an `event` part (event.json) may hold: dd-trace's are a few KB (tags, times,
/// attachment names, endpoint counts, settings).
pub const EVENT_LIMIT: usize = 64 << 10;
