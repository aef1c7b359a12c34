//! The trace as one self-contained HTML page: the analysis embedded as JSON, drawn by an
//! inline script into SVG and tables. No network, no CDN, no external file. The live page
//! ([`live_page`], `acp trace --serve` and `acp serve --dashboard`) is the same page and the
//! same drawing code, fed by server-sent events from the page's own address instead of the
//! embedded JSON.
//!
//! Sections (each with an id, and elements with classes a test or a stylesheet can find):
//! `#sequence` (a sequence diagram, `.lane` per side, `.msg` per message, `.error` on error
//! responses), `#pairs` (`.pair` rows: request, response, latency), `#notifications`
//! (grouped by session and kind), `#timeline` (message rates), `#histograms` (latency per
//! method), `#sessions` (`.health` per session), `#errors`, `#problems`. The live page adds
//! `#live` (the pause/follow button `#follow` and the status `#live-status`).

use super::view::Analysis;

/// The content security policy of both pages: nothing from the network (the live page may
/// open its own `events`).
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:";

/// The sections, in order, after the title.
const BODY: &str = "<div id=\"overview\"></div>\
<h2>Sequence</h2><div id=\"sequence\"></div>\
<h2>Requests and responses</h2><div id=\"pairs\"></div>\
<h2>Notifications by session and kind</h2><div id=\"notifications\"></div>\
<h2>Message rate</h2><div id=\"timeline\"></div>\
<h2>Latency per method</h2><div id=\"histograms\"></div>\
<h2>Sessions</h2><div id=\"sessions\"></div>\
<h2>Errors</h2><div id=\"errors\"></div>\
<h2>Problems in the file</h2><div id=\"problems\"></div>";

/// The page for `analysis` of the trace `name`.
pub fn page(analysis: &Analysis, name: &str) -> String {
    let data = serde_json::to_string(analysis).unwrap_or_else(|_| "{}".to_owned());
    // Inside <script>, "</" could end the element: JSON allows "<\/" instead.
    let data = data.replace("</", "<\\/").replace("<!--", "<\\!--");
    let title = escape(name);
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<title>acp trace: {title}</title><style>{STYLE}</style></head><body>\
<h1>acp trace <code>{title}</code></h1>{BODY}\
<script id=\"trace-data\" type=\"application/json\">{data}</script>\
<script>{SCRIPT}\nrender(JSON.parse(document.getElementById('trace-data').textContent));</script></body></html>\n"
    )
}

/// The live page of `name` (an agent's command line, a server's address): drawn from the
/// events at `events` (relative, with the page's own query string, so a `?token=` goes
/// along), with a pause/follow button. Follow (the default) redraws on every event and keeps
/// the newest messages of the sequence in view; pause keeps the view still (events are
/// still received, and drawn when following again).
pub fn live_page(name: &str) -> String {
    let title = escape(name);
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<title>acp live: {title}</title><style>{STYLE}{LIVE_STYLE}</style></head><body data-live=\"connecting\">\
<h1>acp live <code>{title}</code></h1>\
<div id=\"live\"><button id=\"follow\" type=\"button\" aria-pressed=\"false\">Pause</button> \
<span id=\"live-status\" role=\"status\">connecting</span></div>{BODY}\
<script>{SCRIPT}{LIVE_SCRIPT}</script></body></html>\n"
    )
}

const LIVE_STYLE: &str = r#"
#live{position:sticky;top:0;background:#fafafa;padding:6px 0;border-bottom:1px solid #ddd;z-index:1}
#sequence{max-height:520px;overflow:auto}button{font:inherit;padding:2px 12px}
"#;

/// Subscribes to `events` and redraws with `render` while following.
const LIVE_SCRIPT: &str = r#"
(function(){
let paused=false,latest=null,received=0,drawn=0;
const btn=document.getElementById('follow'),st=document.getElementById('live-status'),seq=document.getElementById('sequence');
function status(){const total=latest&&latest.live?latest.live.total:0;st.textContent=(paused?'paused: showing '+drawn+' of '+total+' messages; ':'following: ')+total+' messages, '+received+' update(s)';document.body.setAttribute('data-live',paused?'paused':'following');}
function draw(){if(!latest)return;render(latest);drawn=latest.live?latest.live.total:0;seq.scrollTop=seq.scrollHeight;}
btn.addEventListener('click',()=>{paused=!paused;btn.textContent=paused?'Follow':'Pause';btn.setAttribute('aria-pressed',String(paused));if(!paused)draw();status();});
const es=new EventSource('events'+location.search);
es.onmessage=e=>{try{latest=JSON.parse(e.data);}catch(_){return;}received++;if(!paused)draw();status();};
es.onerror=()=>{st.textContent='disconnected (the agent or server has stopped?); retrying';document.body.setAttribute('data-live','disconnected');};
})();
"#;

/// HTML-escapes text for element content and attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}
th{background:#f0f0f0}.num{text-align:right;font-variant-numeric:tabular-nums}
.error,.error td{color:#b00020}tr.error{background:#fde8ec}
svg text{font:11px system-ui,sans-serif}.lane line{stroke:#888;stroke-width:2}
.msg line{stroke-width:1.5}.c2a line{stroke:#1565c0}.a2c line{stroke:#2e7d32}.msg.error line{stroke:#b00020}
.msg.response line,.msg.error line{stroke-dasharray:4 3}
.badge{display:inline-block;padding:0 8px;border-radius:8px;color:#fff}
.open{background:#1565c0}.prompting{background:#ef6c00}.waiting{background:#6a1b9a}.errored{background:#b00020}.ended{background:#616161}
details{margin:4px 0}summary{cursor:pointer}.note{color:#666}
"#;

const SCRIPT: &str = r#"
const NS='http://www.w3.org/2000/svg';
const SECTIONS=['overview','sequence','pairs','notifications','timeline','histograms','sessions','errors','problems'];
function el(tag,attrs,text){const e=document.createElement(tag);for(const k in attrs||{})e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;return e;}
function sv(tag,attrs,text){const e=document.createElementNS(NS,tag);for(const k in attrs||{})e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;return e;}
function ms(v){return v==null?'-':v.toFixed(2)+' ms';}
function q(sorted,p){if(!sorted.length)return null;const r=Math.min(sorted.length,Math.max(1,Math.ceil(p*sorted.length)));return sorted[r-1];}
function table(head,rows,cls){const t=el('table');const h=el('tr');head.forEach(x=>h.appendChild(el('th',{},x)));t.appendChild(h);rows.forEach(r=>{const tr=el('tr',{class:(cls&&cls(r.row))||''});r.cells.forEach((c,i)=>tr.appendChild(el('td',{class:typeof c==='number'?'num':''},String(c))));if(r.attrs)for(const k in r.attrs)tr.setAttribute(k,r.attrs[k]);t.appendChild(tr);});return t;}
function render(d){
SECTIONS.forEach(id=>document.getElementById(id).replaceChildren());
const msgs=d.messages||[];
// Overview.
const ov=document.getElementById('overview');
const c2a=msgs.filter(m=>m.dir==='c2a').length;
ov.appendChild(el('p',{},msgs.length+' messages ('+c2a+' client to agent, '+(msgs.length-c2a)+' agent to client) over '+(d.duration/1000).toFixed(2)+' s'+(d.command?'; agent: '+d.command.join(' '):'')+(d.exit?'; '+d.exit:'')));
if(d.protocol!=null)ov.appendChild(el('p',{class:'protocol','data-protocol':d.protocol},'protocol v'+d.protocol));
if(d.live)ov.appendChild(el('p',{class:'live-window'},'live: '+d.live.total+' messages so far; the last '+msgs.length+' shown (window of '+d.live.limit+')'));
// Sequence diagram.
const seq=document.getElementById('sequence');
const MAX=1500,shown=d.live?msgs.slice(-MAX):msgs.slice(0,MAX),W=760,L=140,R=620,ROW=22,H=60+shown.length*ROW;
const svg=sv('svg',{width:W,height:H,viewBox:'0 0 '+W+' '+H,role:'img','aria-label':'sequence diagram'});
[['client',L],['agent',R]].forEach(([name,x])=>{const g=sv('g',{class:'lane','data-lane':name});g.appendChild(sv('text',{x:x,y:16,'text-anchor':'middle','font-weight':'bold'},name));g.appendChild(sv('line',{x1:x,y1:24,x2:x,y2:H-8}));svg.appendChild(g);});
shown.forEach((m,i)=>{const y=40+i*ROW;const from=m.dir==='c2a'?L:R,to=m.dir==='c2a'?R:L;
 const g=sv('g',{class:'msg '+m.dir+' '+m.kind,'data-line':m.line});
 g.appendChild(sv('line',{x1:from,y1:y,x2:to,y2:y}));
 const head=to>from?-6:6;g.appendChild(sv('path',{d:'M'+to+' '+y+' l'+head+' -4 l0 8 z',fill:m.kind==='error'?'#b00020':(m.dir==='c2a'?'#1565c0':'#2e7d32')}));
 let label=(m.method||'?')+(m.id!=null?' #'+m.id:'');if(m.kind==='response'||m.kind==='error')label='↩ '+label+(m.latency!=null?' ('+m.latency.toFixed(1)+' ms)':'');if(m.update)label+=' · '+m.update+(m.state?' '+m.state:'');if(m.stop_reason)label+=' · '+m.stop_reason;if(m.error)label+=' · '+m.error;
 g.appendChild(sv('text',{x:(L+R)/2,y:y-4,'text-anchor':'middle'},label));
 g.appendChild(sv('text',{x:4,y:y+4,fill:'#888'},(m.t/1000).toFixed(3)+'s'));
 svg.appendChild(g);});
seq.appendChild(svg);
if(msgs.length>MAX)seq.appendChild(el('p',{class:'note'},(d.live?'last ':'first ')+MAX+' of '+msgs.length+' messages shown'));
// Pairs.
const reqs=msgs.map((m,i)=>[m,i]).filter(([m])=>m.kind==='request');
document.getElementById('pairs').appendChild(table(['line','direction','method','id','latency','result'],reqs.map(([m])=>{const r=m.pair!=null?msgs[m.pair]:null;return {row:r,attrs:{class:'pair'+(r&&r.kind==='error'?' error':'')},cells:[m.line,m.dir==='c2a'?'client → agent':'agent → client',m.method,m.id,ms(m.latency),r?(r.kind==='error'?'error '+r.error:'ok (line '+r.line+')'):'no answer']};})));
// Notifications by session and kind.
const nb=document.getElementById('notifications');const groups={};
msgs.filter(m=>m.kind==='notification').forEach(m=>{const s=m.session||'(no session)';const k=m.method+(m.update?' · '+m.update:'');(groups[s]=groups[s]||{})[k]=((groups[s]||{})[k]||0)+1;});
Object.keys(groups).forEach(s=>{const det=el('details',{open:'',class:'session-group','data-session':s});det.appendChild(el('summary',{},'session '+s));det.appendChild(table(['kind','count'],Object.keys(groups[s]).sort().map(k=>({cells:[k,groups[s][k]]}))));nb.appendChild(det);});
if(!Object.keys(groups).length)nb.appendChild(el('p',{class:'note'},'no notifications'));
// Timeline.
const tl=d.timeline||[],TW=760,TH=140,bw=tl.length?(TW-40)/tl.length:0,max=Math.max(1,...tl.map(b=>b[1]+b[2]));
const ts=sv('svg',{width:TW,height:TH+20,role:'img','aria-label':'message rate'});
tl.forEach((b,i)=>{const x=30+i*bw,h1=b[1]/max*TH,h2=b[2]/max*TH;ts.appendChild(sv('rect',{class:'rate c2a',x:x,y:TH-h1,width:Math.max(1,bw-1),height:h1,fill:'#1565c0'}));ts.appendChild(sv('rect',{class:'rate a2c',x:x,y:TH-h1-h2,width:Math.max(1,bw-1),height:h2,fill:'#2e7d32'}));});
ts.appendChild(sv('text',{x:0,y:12},String(max)));ts.appendChild(sv('text',{x:30,y:TH+14},'0 s'));ts.appendChild(sv('text',{x:TW-60,y:TH+14},(d.duration/1000).toFixed(2)+' s'));
document.getElementById('timeline').appendChild(ts);
document.getElementById('timeline').appendChild(el('p',{class:'note'},'messages per bucket: blue client → agent, green agent → client'));
// Histograms.
const hb=document.getElementById('histograms');
Object.keys(d.requests||{}).forEach(method=>{const st=d.requests[method];const lat=st.latencies;const box=el('div',{class:'histogram','data-method':method});
 box.appendChild(el('h3',{},method+': '+st.requests+' request(s), p50 '+ms(q(lat,0.5))+', p99 '+ms(q(lat,0.99))+(st.errors?', '+st.errors+' error(s)':'')+(st.unanswered?', '+st.unanswered+' unanswered':'')));
 if(lat.length){const edges=[0.1,0.3,1,3,10,30,100,300,1000,3000,10000,Infinity];const counts=edges.map(()=>0);lat.forEach(v=>{counts[edges.findIndex(e=>v<e)]++;});const m=Math.max(...counts);
  const hs=sv('svg',{width:560,height:110,role:'img','aria-label':'latency histogram'});counts.forEach((c,i)=>{const h=c/m*70;hs.appendChild(sv('rect',{x:10+i*45,y:80-h,width:38,height:h,fill:'#7e57c2'}));hs.appendChild(sv('text',{x:10+i*45,y:95},'<'+(edges[i]===Infinity?'∞':edges[i])));if(c)hs.appendChild(sv('text',{x:12+i*45,y:76-h},String(c)));});
  hs.appendChild(sv('text',{x:10,y:108,fill:'#888'},'ms'));box.appendChild(hs);}
 hb.appendChild(box);});
// Sessions.
const sb=document.getElementById('sessions');
(d.sessions||[]).forEach(s=>{const p=el('p',{class:'health','data-session':s.id,'data-state':s.state});p.appendChild(el('span',{class:'badge '+s.state},s.state));p.appendChild(document.createTextNode(' '+s.id+': '+s.prompts+' prompt(s), '+s.errors+' error(s), '+Object.values(s.updates).reduce((a,b)=>a+b,0)+' update(s)'+(s.stop_reason?', last turn: '+s.stop_reason:'')));sb.appendChild(p);});
if(!(d.sessions||[]).length)sb.appendChild(el('p',{class:'note'},'no sessions'));
// Errors.
const errs=msgs.filter(m=>m.kind==='error');
document.getElementById('errors').appendChild(errs.length?table(['line','method','id','error'],errs.map(m=>({attrs:{class:'error'},cells:[m.line,m.method||'?',m.id,m.error]}))):el('p',{class:'note'},'no errors'));
// Problems.
const pr=d.problems||[];const pb=document.getElementById('problems');
if(pr.length){const ul=el('ul');pr.forEach(p=>ul.appendChild(el('li',{class:'problem error'},p)));pb.appendChild(ul);}else pb.appendChild(el('p',{class:'note'},'none'));
document.body.setAttribute('data-rendered','yes');
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::record::{self, Record};
    use crate::trace::view::{analyse, parse};

    #[test]
    fn agent_text_cannot_end_the_script_or_reach_the_network() {
        let mut r = Record::new(1.0, record::AGENT_TO_CLIENT);
        r.line = Some(
            r#"{"jsonrpc":"2.0","method":"x</script><script>alert(1)</script>","params":{}}"#
                .into(),
        );
        let text = serde_json::to_string(&r).unwrap() + "\n";
        let page = page(&analyse(&parse(text.as_bytes())), "<b>t</b>");
        assert_eq!(
            page.matches("</script>").count(),
            2,
            "only our two script elements end"
        );
        assert!(page.contains("<code>&lt;b&gt;t&lt;/b&gt;</code>"));
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
        assert!(!page.contains("https://"));
    }
}
