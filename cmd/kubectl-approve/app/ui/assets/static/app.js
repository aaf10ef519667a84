// kubectl approve ui: the live inbox and the countdowns. No framework; the
// rows are rendered by the server (html/template, run content escaped) and
// only moved into place here.
(function () {
  'use strict';

  function human(seconds) {
    var s = Math.abs(Math.round(seconds));
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60), r = s % 60;
    if (d > 0) return d + 'd ' + h + 'h';
    if (h > 0) return h + 'h ' + m + 'm';
    if (m > 0) return m + 'm ' + r + 's';
    return r + 's';
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll('time[data-countdown]').forEach(function (t) {
      var left = (Date.parse(t.getAttribute('datetime')) - now) / 1000;
      t.textContent = left > 0 ? 'in ' + human(left) : 'expired';
      t.title = t.getAttribute('datetime');
      t.classList.toggle('soon', left > 0 && left < 300);
    });
    document.querySelectorAll('time[data-ago]').forEach(function (t) {
      t.textContent = human((now - Date.parse(t.getAttribute('datetime'))) / 1000) + ' ago';
      t.title = t.getAttribute('datetime');
    });
  }

  function fromHTML(html) {
    var t = document.createElement('template');
    t.innerHTML = html; // server-rendered by html/template: every value in it is escaped
    return t.content;
  }

  function live() {
    var list = document.getElementById('inbox');
    var status = document.getElementById('live');
    var empty = document.getElementById('empty');
    if (!list || !window.EventSource) return;
    function say(text) { status.textContent = text; }
    function settle() { empty.hidden = list.children.length > 0; }
    var url = '/events';
    var since = status.getAttribute('data-since');
    if (since) url += '?since=' + encodeURIComponent(since);
    var es = new EventSource(url);
    es.addEventListener('upsert', function (e) {
      var d = JSON.parse(e.data);
      var row = fromHTML(d.html).firstElementChild;
      var old = document.getElementById('row-' + d.key);
      if (old) { old.replaceWith(row); } else { list.appendChild(row); say('New approval waiting: ' + d.run); }
      tick(); settle();
    });
    es.addEventListener('remove', function (e) {
      var d = JSON.parse(e.data);
      var old = document.getElementById('row-' + d.key);
      if (old) { old.remove(); say('No longer waiting: ' + d.run); }
      settle();
    });
    es.addEventListener('reset', function (e) {
      var d = JSON.parse(e.data);
      list.replaceChildren(fromHTML(d.html));
      tick(); settle();
    });
    es.addEventListener('problem', function (e) {
      say('The live view stopped: ' + JSON.parse(e.data).message);
    });
    es.addEventListener('open', function () {
      status.setAttribute('data-state', 'live');
      say('Live: updates arrive as runs pause and move on.');
    });
    es.addEventListener('error', function () {
      status.setAttribute('data-state', 'reconnecting');
      say('Reconnecting…');
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    tick();
    setInterval(tick, 1000);
    live();
  });
})();
