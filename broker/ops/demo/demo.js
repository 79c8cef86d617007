/* The demo page: a live counter driven by POST /publish and a one-room chat, on sockjs-client. */
(function () {
  'use strict';

  var RETRY_FIRST_MS = 500;
  var RETRY_MAX_MS = 10000;
  var LOG_LINES = 200;

  var $ = function (id) { return document.getElementById(id); };
  var prefix = document.querySelector('meta[name="sockjs-prefix"]').content;
  var nickname = 'guest-' + Math.floor(1000 + Math.random() * 9000);
  var forced = new URLSearchParams(location.search).get('transport') || '';
  var sock = null;
  var retryDelay = RETRY_FIRST_MS;
  var retryTimer = null;

  function setState(state, transport) {
    $('state').textContent = state;
    $('state').dataset.state = state;
    $('transport').textContent = transport || '\u2013';
    $('chat-input').disabled = $('chat-send').disabled = state !== 'open';
  }

  function logLine(text, className) {
    var log = $('log');
    var item = document.createElement('li');
    item.textContent = text;
    if (className) item.className = className;
    log.appendChild(item);
    while (log.children.length > LOG_LINES) log.removeChild(log.firstChild);
    log.scrollTop = log.scrollHeight;
  }

  function showCounter(value) {
    var counter = $('counter');
    counter.textContent = String(value);
    counter.classList.remove('bump');
    void counter.offsetWidth;
    counter.classList.add('bump');
    $('counter-updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  }

  /* Browsers send strings (chat lines); only a backend can publish a JSON object such as {"counter": 7}. */
  function receive(message) {
    if (typeof message === 'string') {
      logLine(message);
    } else if (message && typeof message.counter === 'number') {
      showCounter(message.counter);
    } else if (message && typeof message.audience === 'number' && Object.keys(message).length === 1) {
      $('audience').textContent = message.audience.toLocaleString() + ' watching';
    } else {
      logLine('published: ' + JSON.stringify(message), 'system');
    }
  }

  function connect() {
    retryTimer = null;
    if (typeof SockJS === 'undefined') {
      setState('closed');
      return;
    }
    setState('connecting');
    var current = new SockJS(location.origin + prefix, null, forced ? { transports: [forced] } : {});
    sock = current;
    current.onopen = function () {
      if (sock !== current) return;
      retryDelay = RETRY_FIRST_MS;
      setState('open', current.transport);
      logLine('connected via ' + current.transport, 'system');
    };
    current.onmessage = function (event) {
      if (sock === current) receive(event.data);
    };
    current.onclose = function (event) {
      if (sock !== current) return;
      setState('closed');
      logLine('disconnected (' + event.code + ' ' + event.reason + '), retrying in ' +
              Math.round(retryDelay / 1000) + ' s', 'system');
      retryTimer = setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, RETRY_MAX_MS);
    };
  }

  function reconnect() {
    var previous = sock;
    sock = null;
    if (previous) previous.close();
    if (retryTimer) clearTimeout(retryTimer);
    retryDelay = RETRY_FIRST_MS;
    connect();
  }

  $('chat-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var text = $('chat-input').value.trim();
    if (!text || !sock || sock.readyState !== SockJS.OPEN) return;
    sock.send(nickname + ': ' + text);
    $('chat-input').value = '';
  });

  $('transport-choice').value = forced;
  $('transport-choice').addEventListener('change', function (event) {
    forced = event.target.value;
    var url = new URL(location.href);
    if (forced) url.searchParams.set('transport', forced);
    else url.searchParams.delete('transport');
    history.replaceState(null, '', url);
    reconnect();
  });

  $('nickname').textContent = nickname;
  $('publish-url').textContent = location.origin + '/publish';
  connect();
}());
