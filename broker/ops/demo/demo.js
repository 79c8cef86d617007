/* The demo page: a live counter the broker keeps (POST /publish?key=raised&op=add) and a
   one-room chat, on the broker's own client (broker-client.js: sockjs-client with resume).
   With /?rooms=spring,autumn it follows those rooms instead, a campaign card each (its
   counter, its audience, its messages), side by side over one connection: a page of several
   rooms only listens, so it has no chat. */
(function () {
  'use strict';

  var LOG_LINES = 200;
  // The publish hints' first line, so that the curl line after it runs as pasted.
  var TOKEN_LINE = "TOKEN=s3cret  # the broker's --publish-token (BROKER_PUBLISH_TOKEN): the quick start's\n";

  var $ = function (id) { return document.getElementById(id); };
  var prefix = document.querySelector('meta[name="sockjs-prefix"]').content;
  // The broker's --heartbeat-delay, from which the client's silence bound follows.
  var heartbeatMs = Number(document.querySelector('meta[name="sockjs-heartbeat-ms"]').content);
  var nickname = 'guest-' + Math.floor(1000 + Math.random() * 9000);
  var query = new URLSearchParams(location.search);
  var forced = query.get('transport') || '';
  // The campaigns' rooms, by name: each one's card's callbacks; null for the default room.
  var campaigns = null;
  var client = null;

  function setState(state, transport) {
    $('state').textContent = state;
    $('state').dataset.state = state;
    $('transport').textContent = transport || '\u2013';
    $('chat-input').disabled = $('chat-send').disabled = state !== 'open';
  }

  function logLine(log, text, className) {
    var item = document.createElement('li');
    item.textContent = text;
    if (className) item.className = className;
    log.appendChild(item);
    while (log.children.length > LOG_LINES) log.removeChild(log.firstChild);
    log.scrollTop = log.scrollHeight;
  }

  /* Every log on the page: the chat's, or each campaign's. */
  function logEverywhere(text, className) {
    var logs = document.querySelectorAll('main .log');
    for (var i = 0; i < logs.length; i++) logLine(logs[i], text, className);
  }

  /* The total is an exact decimal string: shown as it is, never through Number(). */
  function showCounter(counter, updated, name, value) {
    counter.textContent = value;
    counter.title = name;
    counter.classList.remove('bump');
    void counter.offsetWidth;
    counter.classList.add('bump');
    updated.textContent = 'updated ' + new Date().toLocaleTimeString();
  }

  /* Browsers send strings (chat lines); only a backend, or the broker, can publish a JSON object. */
  function receive(log, message) {
    if (typeof message === 'string') {
      logLine(log, message);
    } else {
      logLine(log, 'published: ' + JSON.stringify(message), 'system');
    }
  }

  function announced(audience, message) {
    if (message && typeof message.audience === 'number') {
      audience.textContent = message.audience.toLocaleString() + ' watching';
    }
  }

  function missed(log, reason) {
    logLine(log, 'missed messages (' + reason + '): showing the latest', 'system');
  }

  function publishLine(room) {
    return location.origin + '/publish?' + (room ? 'room=' + encodeURIComponent(room) + '&' : '') + 'key=raised&op=add';
  }

  /* A campaign card for room, its callbacks for the client. */
  function campaignCard(room) {
    var card = $('campaign').content.firstElementChild.cloneNode(true);
    card.dataset.room = room;
    card.querySelector('.room').textContent = room;
    card.querySelector('.publish-line').textContent = TOKEN_LINE + 'curl -H "Authorization: Bearer $TOKEN" -d 25.50 \\\n  \'' +
      publishLine(room) + '\'';
    $('main').appendChild(card);
    var log = card.querySelector('.log');
    return {
      onmessage: function (message) { receive(log, message); },
      oncounter: function (name, value) {
        showCounter(card.querySelector('.counter'), card.querySelector('.updated'), name, value);
      },
      onannouncement: function (message) { announced(card.querySelector('.audience'), message); },
      ongap: function (reason) { missed(log, reason); }
    };
  }

  function stateChanged(state, detail) {
    if (state === 'open') {
      setState('open', detail);
      logEverywhere('connected via ' + detail, 'system');
    } else if (state === 'closed' || state === 'stopped') {
      setState('closed');
      if (detail) logEverywhere('disconnected (' + detail.code + ' ' + detail.reason + ')' +
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
    var options = {
      transports: forced ? [forced] : undefined,
      heartbeatMs: heartbeatMs,
      onstatechange: stateChanged
    };
    if (campaigns) {
      options.rooms = campaigns;
    } else {
      options.onmessage = function (message) { receive($('log'), message); };
      options.oncounter = function (name, value) { showCounter($('counter'), $('counter-updated'), name, value); };
      options.onannouncement = function (message) { announced($('audience'), message); };
      options.ongap = function (reason) { missed($('log'), reason); };
    }
    client = new BrokerClient(location.origin + prefix, options);
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

  if (query.get('rooms')) {
    campaigns = {};
    query.get('rooms').split(',').forEach(function (room) {
      if (room && !Object.prototype.hasOwnProperty.call(campaigns, room)) campaigns[room] = campaignCard(room);
    });
    document.querySelector('.counter-card').hidden = true;
    document.querySelector('.chat-card').hidden = true;
    $('main').classList.add('campaigns');
  }
  $('nickname').textContent = nickname;
  $('publish-url').textContent = publishLine(null);
  connect();
}());
