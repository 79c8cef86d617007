/* The demo page: a live counter the broker keeps (POST /publish?key=raised&op=add) and a
   one-room chat, on the broker's own client (broker-client.js: sockjs-client with resume). */
(function () {
  'use strict';

  var LOG_LINES = 200;

  var $ = function (id) { return document.getElementById(id); };
  var prefix = document.querySelector('meta[name="sockjs-prefix"]').content;
  // The broker's --heartbeat-delay, from which the client's silence bound follows.
  var heartbeatMs = Number(document.querySelector('meta[name="sockjs-heartbeat-ms"]').content);
  var nickname = 'guest-' + Math.floor(1000 + Math.random() * 9000);
  var forced = new URLSearchParams(location.search).get('transport') || '';
  var client = null;

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

  /* The total is an exact decimal string: shown as it is, never through Number(). */
  function showCounter(name, value) {
    var counter = $('counter');
    counter.textContent = value;
    counter.title = name;
    counter.classList.remove('bump');
    void counter.offsetWidth;
    counter.classList.add('bump');
    $('counter-updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  }

  /* Browsers send strings (chat lines); only a backend, or the broker, can publish a JSON object. */
  function receive(message) {
    if (typeof message === 'string') {
      logLine(message);
    } else {
      logLine('published: ' + JSON.stringify(message), 'system');
    }
  }

  function announced(message) {
    if (message && typeof message.audience === 'number') {
      $('audience').textContent = message.audience.toLocaleString() + ' watching';
    }
  }

  function stateChanged(state, detail) {
    if (state === 'open') {
      setState('open', detail);
      logLine('connected via ' + detail, 'system');
    } else if (state === 'closed' || state === 'stopped') {
      setState('closed');
      if (detail) logLine('disconnected (' + detail.code + ' ' + detail.reason + ')' +
                          (state === 'closed' ? ', reconnecting' : ''), 'system');
    } else {
      setState(state);
    }
  }

  function connect() {
    if (typeof SockJS === 'undefined' || typeof BrokerClient === 'undefined') {
      setState('closed');
      return;
    }
    client = new BrokerClient(location.origin + prefix, {
      transports: forced ? [forced] : undefined,
      heartbeatMs: heartbeatMs,
      onmessage: receive,
      oncounter: showCounter,
      onannouncement: announced,
      ongap: function (reason) { logLine('missed messages (' + reason + '): showing the latest', 'system'); },
      onstatechange: stateChanged
    });
  }

  function reconnect() {
    if (client) client.close();
    connect();
  }

  $('chat-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var text = $('chat-input').value.trim();
    if (!text || !client || !client.send(nickname + ': ' + text)) return;
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
  $('publish-url').textContent = location.origin + '/publish?key=raised&op=add';
  connect();
}());
