/**
 * The embeddable widget (`GET /widget.js`): dependency-free, no external asset, no eval, no inline
 * style or script (styles are set through the DOM), so a strict Content-Security-Policy admits it.
 * Embed: `<script src="{base_url}/widget.js" data-key="wpk_…" defer></script>` (or
 * `data-key-query="key"` to read the key from the page's query string); it mounts in
 * `#incident-widget` or a box it appends to the body.
 */
export const WIDGET_SCRIPT = String.raw`(function () {
  'use strict';
  var script = document.currentScript;
  if (!script) return;
  var api = script.getAttribute('data-api') || new URL(script.src).origin;
  // The page's query string names the key only when the tag asks (the demo): otherwise a link to
  // the portal could carry a key of anyone's tenant that allows the portal's origin.
  var keyQuery = script.getAttribute('data-key-query');
  var key = script.getAttribute('data-key') ||
    (keyQuery ? new URLSearchParams(location.search).get(keyQuery) : '') || '';
  var session = null;
  var stream = null;
  var shown = {};

  function el(tag, style, text) {
    var node = document.createElement(tag);
    if (style) Object.keys(style).forEach(function (k) { node.style[k] = style[k]; });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  var root = document.getElementById('incident-widget');
  if (!root) { root = el('div'); root.id = 'incident-widget'; document.body.appendChild(root); }
  var box = el('div', { fontFamily: 'system-ui, sans-serif', border: '1px solid #ccd', borderRadius: '8px',
    width: '360px', maxWidth: '100%', display: 'flex', flexDirection: 'column', background: '#fff' });
  var title = el('div', { padding: '8px 12px', borderBottom: '1px solid #ccd', fontWeight: '600' }, 'Incident assistant');
  var log = el('div', { padding: '8px 12px', height: '320px', overflowY: 'auto', fontSize: '14px' });
  log.setAttribute('role', 'log');
  log.setAttribute('aria-live', 'polite');
  var status = el('div', { padding: '0 12px', fontSize: '12px', color: '#667' });
  status.className = 'iw-status';
  var form = el('form', { display: 'flex', borderTop: '1px solid #ccd' });
  var input = el('input', { flex: '1', border: '0', padding: '8px 12px', fontSize: '14px' });
  input.name = 'message';
  input.placeholder = 'Ask about past incidents…';
  input.setAttribute('aria-label', 'Your question');
  var send = el('button', { border: '0', padding: '8px 12px', cursor: 'pointer' }, 'Ask');
  send.type = 'submit';
  form.appendChild(input); form.appendChild(send);
  box.appendChild(title); box.appendChild(log); box.appendChild(status); box.appendChild(form);
  root.appendChild(box);

  function say(text) { status.textContent = text; }
  function add(role, text, sources) {
    var item = el('div', { margin: '6px 0', textAlign: role === 'user' ? 'right' : 'left' });
    item.className = 'iw-' + role;
    var bubble = el('div', { display: 'inline-block', padding: '6px 10px', borderRadius: '8px', whiteSpace: 'pre-wrap',
      background: role === 'user' ? '#e8eefc' : '#f3f3f6', textAlign: 'left' }, text);
    item.appendChild(bubble);
    if (sources && sources.length) {
      var list = el('ul', { margin: '4px 0 0 0', paddingLeft: '18px', fontSize: '12px', color: '#445' });
      list.className = 'iw-sources';
      sources.forEach(function (s) {
        var li = el('li', null, s.title + ' (' + s.type + ' ' + s.id + ')');
        li.className = 'iw-source';
        list.appendChild(li);
      });
      item.appendChild(list);
    }
    log.appendChild(item);
    log.scrollTop = log.scrollHeight;
  }
  function showReply(r) {
    if (shown[r.messageId]) return;
    shown[r.messageId] = true;
    add('assistant', r.reply, r.sources);
  }

  function call(method, path, body) {
    var headers = { Authorization: 'Bearer ' + (path === '/v1/widget/sessions' ? key : session.token) };
    if (body) headers['Content-Type'] = 'application/json';
    return fetch(api + path, { method: method, headers: headers, body: body ? JSON.stringify(body) : undefined })
      .then(function (res) {
        return res.text().then(function (t) {
          var json = t ? JSON.parse(t) : null;
          if (!res.ok) { var e = new Error((json && json.message) || res.statusText); e.status = res.status; throw e; }
          return json;
        });
      });
  }
  function listen() {
    if (stream) stream.close();
    // EventSource reconnects by itself and resumes with Last-Event-ID.
    stream = new EventSource(api + '/v1/widget/sessions/' + session.sessionId + '/stream?token=' +
      encodeURIComponent(session.token));
    stream.addEventListener('open', function () { say('Connected'); });
    stream.addEventListener('error', function () { say('Reconnecting…'); });
    stream.addEventListener('message.complete', function (e) { showReply(JSON.parse(e.data)); });
    stream.addEventListener('session.expiry_warning', function (e) {
      say('This conversation ends at ' + new Date(JSON.parse(e.data).expiresAt).toLocaleTimeString() + ' unless you ask again');
    });
    stream.addEventListener('session.closed', function () {
      stream.close(); stream = null; session = null; say('Conversation ended; asking again starts a new one');
    });
  }
  function open() {
    return call('POST', '/v1/widget/sessions').then(function (s) { session = s; listen(); return s; });
  }
  function ask(text, retried) {
    return (session ? Promise.resolve(session) : open())
      .then(function (s) { return call('POST', '/v1/widget/sessions/' + s.sessionId + '/messages', { message: text }); })
      .then(showReply)
      .catch(function (err) {
        // An ended session (closed, expired) is replaced once.
        if (!retried && (err.status === 401 || err.status === 404)) { session = null; return ask(text, true); }
        say('Could not ask: ' + err.message);
      });
  }
  form.addEventListener('submit', function (e) {
    e.preventDefault();
    var text = input.value.trim();
    if (!text) return;
    input.value = '';
    add('user', text);
    say('Thinking…');
    send.disabled = true;
    ask(text).then(function () { send.disabled = false; if (status.textContent === 'Thinking…') say(''); input.focus(); });
  });
  if (!key) say('No widget key: add data-key to the script tag');
})();
`;

export const DEMO_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Incident assistant widget demo</title>
</head>
<body>
<h1>Incident assistant widget</h1>
<p>Open this page as <code>/widget/demo?key=wpk_…</code> with a publishable widget key whose allowed origins include this page's origin.</p>
<div id="incident-widget"></div>
<script src="/widget.js" data-key-query="key" defer></script>
</body>
</html>
`;
