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
/// page shows the whole profile's share, from /api/match). A term that arrives before the
/// SVG's own script has set itself up (its `init` runs at the document's load) is searched
/// at that load.
pub const IN_PAGE_SEARCH: &str = "<script><![CDATA[\n(function(){\
if(typeof g_to_text==='function')g_to_func=function(e){return g_to_text(e).replace(/ \\([^()]*\\)$/,'');};\
if(typeof search==='function'){var s0=search;search=function(t){s0(t);\
if(typeof matchedtxt!=='undefined'&&matchedtxt&&matchedtxt.firstChild){var v=matchedtxt.firstChild.nodeValue||'';\
matchedtxt.firstChild.nodeValue=v.replace('Matched:','Drawn frames matched:');}};}\
window.addEventListener('message',function(e){\
if(e.source!==window.parent)return;var d=e.data;if(!d||d.agentprof!=='search'||typeof d.term!=='string'||d.term.length>1024)return;\
try{new RegExp(d.term);}catch(x){return;}\
if(typeof searching!=='undefined'&&searching&&typeof search_prompt==='function')search_prompt();\
if(!d.term||typeof search!=='function')return;\
var go=function(){try{search(d.term);}catch(x){}};\
if(document.getElementById('frames')===frames)go();else window.addEventListener('load',go,{once:true});});})();\n]]></script>";

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

/// The script the call graph gets: it fills its frame, and where the frame would shrink it
/// below 80 % (a tall graph's text of a few pixels) it opens at its own size on the top row
/// instead; the
/// wheel zooms about the pointer, a drag pans, `+`, `-` and `0` zoom in, out and to fit,
/// and the page's buttons send `{agentprof:'zoom', by}` (a factor, `fit` or `actual`). A
/// click on a box tells the page its function (`{agentprof:'frame', name}`) for its
/// filters; the page's search box (and the frame's `s=`) highlights the boxes whose
/// function matches and brings the first into view (`data-matched` on the root says how
/// many).
pub const GRAPH_NAVIGATION: &str = r##"<script><![CDATA[
(function(){
var svg=document.documentElement;if(!svg||!svg.viewBox||!svg.viewBox.baseVal)return;
var W0=svg.viewBox.baseVal.width,H0=svg.viewBox.baseVal.height;
svg.setAttribute('width','100%');svg.setAttribute('height','100%');
svg.setAttribute('preserveAspectRatio','xMidYMin meet');
var v={x:0,y:0,w:W0,h:H0};
function set(){svg.setAttribute('viewBox',v.x+' '+v.y+' '+v.w+' '+v.h);svg.setAttribute('data-scale',String(scale()));}
function frame(){return {w:window.innerWidth||800,h:window.innerHeight||600};}
function scale(){var r=svg.getBoundingClientRect();return Math.min(r.width/v.w,r.height/v.h);}
function fit(){v={x:0,y:0,w:W0,h:H0};set();}
function actual(cx){var f=frame();v={x:cx-f.w/2,y:0,w:f.w,h:f.h};set();}
function topCentre(){var r=document.querySelector('g.node rect');return r?parseFloat(r.getAttribute('x'))+parseFloat(r.getAttribute('width'))/2:W0/2;}
if(Math.min(frame().w/W0,frame().h/H0)<0.8)actual(topCentre());else fit();
function zoom(k,px,py){v={x:px-(px-v.x)/k,y:py-(py-v.y)/k,w:v.w/k,h:v.h/k};set();}
function user(e){var r=svg.getBoundingClientRect(),k=scale(),ox=(r.width-v.w*k)/2;return {x:v.x+(e.clientX-r.left-ox)/k,y:v.y+(e.clientY-r.top)/k};}
svg.addEventListener('wheel',function(e){e.preventDefault();var p=user(e);zoom(e.deltaY<0?1.25:0.8,p.x,p.y);},{passive:false});
var drag=null,moved=false;
svg.addEventListener('mousedown',function(e){drag={x:e.clientX,y:e.clientY,vx:v.x,vy:v.y};moved=false;e.preventDefault();});
window.addEventListener('mousemove',function(e){if(!drag)return;var k=scale(),dx=(e.clientX-drag.x)/k,dy=(e.clientY-drag.y)/k;
if(Math.abs(e.clientX-drag.x)+Math.abs(e.clientY-drag.y)>3)moved=true;if(!moved)return;v.x=drag.vx-dx;v.y=drag.vy-dy;set();});
window.addEventListener('mouseup',function(){drag=null;});
svg.addEventListener('click',function(e){if(moved)return;var g=e.target&&e.target.closest?e.target.closest('g.node'):null;if(!g)return;
var t=g.querySelector('title');if(t)window.parent.postMessage({agentprof:'frame',name:t.textContent},'*');});
window.addEventListener('keydown',function(e){var cx=v.x+v.w/2,cy=v.y+v.h/2;
if(e.key==='+'||e.key==='=')zoom(1.25,cx,cy);else if(e.key==='-')zoom(0.8,cx,cy);else if(e.key==='0')fit();});
window.addEventListener('message',function(e){if(e.source!==window.parent)return;var d=e.data;if(!d)return;
if(d.agentprof==='zoom'){var cx=v.x+v.w/2,cy=v.y+v.h/2;if(d.by==='fit')fit();else if(d.by==='actual')actual(cx);
else if(typeof d.by==='number'&&d.by>0.1&&d.by<10)zoom(d.by,cx,cy);return;}
if(d.agentprof==='search'&&typeof d.term==='string'&&d.term.length<=1024)highlight(d.term);
});
function highlight(term){
var re=null;try{re=term?new RegExp(term):null;}catch(x){return;}
var n=0,first=null;
document.querySelectorAll('g.node').forEach(function(g){var t=g.querySelector('title'),r=g.querySelector('rect');if(!r)return;
var hit=!!(re&&t&&re.test(t.textContent));r.setAttribute('stroke-width',hit?'4':'1');r.setAttribute('stroke',hit?'#7b3fe4':'#555');
if(hit){n++;if(!first)first=r;}});
svg.setAttribute('data-matched',String(n));
if(first){var bx=parseFloat(first.getAttribute('x'))+parseFloat(first.getAttribute('width'))/2,by=parseFloat(first.getAttribute('y'));
if(bx<v.x||bx>v.x+v.w||by<v.y||by>v.y+v.h){v.x=bx-v.w/2;v.y=Math.max(0,by-v.h/3);set();}}
}
var s0=/[?&]s=([^&]*)/.exec(location.search);if(s0){try{highlight(decodeURIComponent(s0[1].replace(/\+/g,' ')));}catch(x){}}
svg.setAttribute('data-zoomable','1');
})();
]]></script>"##;

/// `svg` with [`GRAPH_NAVIGATION`] before its end.
pub fn with_graph_navigation(mut svg: Vec<u8>) -> Vec<u8> {
    if let Some(at) = svg.windows(6).rposition(|w| w == b"</svg>") {
        svg.splice(at..at, GRAPH_NAVIGATION.bytes());
    }
    svg
}
