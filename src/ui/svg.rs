//! A flamegraph as the ui serves it: its SVG kept (and gzip-compressed once), with the
//! scripts the ui adds so the page can search it and pick a frame of it.

/// A drawn flamegraph's SVG, and its gzip-compressed form, made once the first client that
/// takes gzip asks (the page asks twice: a prefetch, then the frame).
pub struct Svg {
    pub plain: bytes::Bytes,
    pub(super) gzipped: std::sync::OnceLock<bytes::Bytes>,
    pub(super) _held: Option<crate::budget::Reservation>,
    /// Frames folded into their callers to keep the picture's bound.
    pub folded: usize,
}

impl Svg {
    pub fn new(plain: Vec<u8>) -> Svg {
        Svg {
            plain: plain.into(),
            gzipped: std::sync::OnceLock::new(),
            _held: None,
            folded: 0,
        }
    }

    pub fn gzipped(&self) -> bytes::Bytes {
        self.gzipped
            .get_or_init(|| crate::pprof::gzip_fast(&self.plain).into())
            .clone()
    }
}
/// The script the ui adds to every flamegraph it serves: the page's search box sends its
/// text as the user types (`{agentprof:'search', term}`), and the SVG highlights the
/// matches with its own search, in place — nothing is fetched again. Only the page that
/// framed it is listened to; a term that is no valid regular expression yet (mid-typing)
/// leaves the last highlight. The search matches a frame's function name alone (not its
/// title's " (N samples, x%)"), so `$` and `^` anchor as in go tool pprof; what it finds is
/// called "Drawn frames matched", as it cannot see frames folded out of the picture (the
/// page shows the whole profile's share, from /api/match).
pub const IN_PAGE_SEARCH: &str = "<script><![CDATA[\n(function(){\
if(typeof g_to_text==='function')g_to_func=function(e){return g_to_text(e).replace(/ \\([^()]*\\)$/,'');};\
if(typeof search==='function'){var s0=search;search=function(t){s0(t);\
if(typeof matchedtxt!=='undefined'&&matchedtxt&&matchedtxt.firstChild){var v=matchedtxt.firstChild.nodeValue||'';\
matchedtxt.firstChild.nodeValue=v.replace('Matched:','Drawn frames matched:');}};}\
window.addEventListener('message',function(e){\
if(e.source!==window.parent)return;var d=e.data;if(!d||d.agentprof!=='search'||typeof d.term!=='string'||d.term.length>1024)return;\
try{new RegExp(d.term);}catch(x){return;}\
if(typeof searching!=='undefined'&&searching&&typeof search_prompt==='function')search_prompt();\
if(d.term&&typeof search==='function'){try{search(d.term);}catch(x){}}});})();\n]]></script>";

/// The script the profile view's flamegraph also gets: a right-click on a frame tells the
/// page which function it is (`{agentprof:'frame', name}`), for its filters.
pub const FRAME_PICKER: &str = "<script><![CDATA[\n(function(){document.addEventListener('contextmenu',function(e){\
var g=e.target&&e.target.closest?e.target.closest('g'):null;if(!g)return;var t=g.querySelector('title');if(!t)return;\
var n=t.textContent.replace(/ \\([^()]*\\)$/,'');e.preventDefault();\
window.parent.postMessage({agentprof:'frame',name:n},'*');});})();\n]]></script>";

/// `svg` with [`IN_PAGE_SEARCH`] before its end.
pub fn with_search(mut svg: Vec<u8>) -> Vec<u8> {
    if let Some(at) = svg.windows(6).rposition(|w| w == b"</svg>") {
        svg.splice(at..at, IN_PAGE_SEARCH.bytes());
    }
    svg
}

/// `svg` with [`IN_PAGE_SEARCH`] and [`FRAME_PICKER`] before its end.
pub fn with_frame_picker(svg: Vec<u8>) -> Vec<u8> {
    let mut svg = with_search(svg);
    if let Some(at) = svg.windows(6).rposition(|w| w == b"</svg>") {
        svg.splice(at..at, FRAME_PICKER.bytes());
    }
    svg
}
