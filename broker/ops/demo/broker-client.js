/* broker-client.js: sockjs-client that comes back after every drop, missing nothing the broker's
   history still holds, saying when it missed something, and showing nothing twice. No build
   step: load sockjs-client, then this file.

     var client = new BrokerClient('https://example.com/broadcast', {
       onmessage: function (message, offset) { ... },  // every room message, once, in order
       oncounter: function (name, value) { ... },       // optional: a counter's newer total, a string
       ongap: function (reason) { ... },                // messages were lost (see below)
       onannouncement: function (message) { ... },      // the broker's own, e.g. {audience: 12345}
       onstatechange: function (state, detail) { ... }, // connecting, open, closed, stopped
       transports: ['websocket', 'xhr-streaming'],      // optional, as for SockJS
       heartbeatMs: 25000,                              // optional: the broker's --heartbeat-delay
       silenceMs: 35000                                 // optional, see below
     });
     client.send('hello');
     client.close();

   Rules it keeps:
   - It asks for positions (?positions=1) and keeps the room's epoch and the newest offset it
     delivered; every reconnect asks to resume after them (&epoch=E&since=O). The broker
     answers with every message after that offset, or with a gap (the history was lost, or
     is older than the broker keeps): ongap(reason) is called once for each gap, before what
     the broker sends after it: every counter's total and the last --replay messages (none by
     default: then only the counters), or, after a lost history (reason "epoch"), every
     message of the new history when the broker holds them all. What a page must show
     whatever it missed is best published as a counter, or under ?key= with --replay 1.
   - A message at or before the newest offset delivered in the same epoch is not delivered
     again, what follows a gap included.
   - With oncounter, a counter's total (the broker's {"counter": NAME, "value": "21.50"}, POST
     /publish?key=NAME&op=add) goes to oncounter(name, value) instead of onmessage, and only if
     its offset is after that of the last total shown for that name in the same epoch: every
     connection's first messages carry every counter's latest total, which may be one already
     shown, or (from a broker behind the others, after a gap) an older one. The value is the
     exact decimal as a string: parse it with a decimal library, never with Number(), to compute.
   - Reconnecting waits a random time up to a delay that starts at 0.5 s and doubles to 30 s
     ("full jitter"), so that thousands of pages dropped together do not come back together;
     the delay starts again once a connection has opened and been told where it starts.
     Close code 3012 (a broker draining for a deploy, or a connection at its age limit)
     on a connection that was serving reconnects within 1 s, to any broker.
   - A connection that brings nothing, not even a heartbeat, for silenceMs is taken as dead:
     it is closed at once, without waiting for the broker, and replaced as after any close
     (a new session, which a proxy may send to another broker, resuming). silenceMs is by
     default the broker's heartbeat, heartbeatMs (25 s, as --heartbeat-delay by default),
     plus 10 s for a late one (a stream's next request, a busy broker or network): 35 s.
     Pages of a broker run with another --heartbeat-delay are given it as heartbeatMs. This
     is how a hung broker (stopped, swapping, its machine gone) is noticed: it closes
     nothing, and sockjs-client notices a dead stream on some transports only when the
     browser does, which may be never.
   - Close codes that mean the same client would be refused again (1003 binary, 1007 invalid
     message, 1009 message too big, 3013 rooms refused) stop it: state "stopped", and no reconnect.
*/
(function (root) {
  'use strict';

  var FIRST_DELAY_MS = 500;
  var MAX_DELAY_MS = 30000;
  var RECONNECT_NOW_MS = 1000;
  var RECONNECT_NOW = 3012;
  var STOP_CODES = [1003, 1007, 1009, 3013];
  // The broker's heartbeat by default (--heartbeat-delay), and how late one may be beyond it.
  var HEARTBEAT_MS = 25000;
  var LATE_HEARTBEAT_MS = 10000;
  var SILENT = 4000;

  function offsetKey(offset) {
    var parts = String(offset).split('-');
    return [Number(parts[0]), Number(parts[1] || 0)];
  }

  function after(a, b) {
    var x = offsetKey(a);
    var y = offsetKey(b);
    return x[0] > y[0] || (x[0] === y[0] && x[1] > y[1]);
  }

  function isCounter(message) {
    return message !== null && typeof message === 'object' && typeof message.counter === 'string' &&
      typeof message.value === 'string';
  }

  function BrokerClient(url, options) {
    this.url = url;
    this.options = options || {};
    this.silenceMs = this.options.silenceMs || (this.options.heartbeatMs || HEARTBEAT_MS) + LATE_HEARTBEAT_MS;
    this.epoch = null;
    this.offset = null;
    this._counters = {};
    this._joined = null;
    this.state = 'connecting';
    this._delay = FIRST_DELAY_MS;
    this._timer = null;
    this._watchdog = null;
    this._sock = null;
    this._connect();
  }

  BrokerClient.prototype._call = function (name) {
    var callback = this.options[name];
    if (typeof callback === 'function') callback.apply(null, Array.prototype.slice.call(arguments, 1));
  };

  BrokerClient.prototype._setState = function (state, detail) {
    this.state = state;
    this._call('onstatechange', state, detail);
  };

  BrokerClient.prototype._resumeUrl = function () {
    var query = 'positions=1';
    if (this.epoch !== null) {
      // The newest offset delivered, or where the connection joined if the state it was given is older.
      var since = this.offset === null || after(this._joined, this.offset) ? this._joined : this.offset;
      query += '&epoch=' + encodeURIComponent(this.epoch) + '&since=' + encodeURIComponent(since);
    }
    return this.url + (this.url.indexOf('?') < 0 ? '?' : '&') + query;
  };

  BrokerClient.prototype._connect = function () {
    var self = this;
    self._timer = null;
    self._setState('connecting');
    self._started = false;
    var sock = new SockJS(self._resumeUrl(), null, self.options.transports ? { transports: self.options.transports } : {});
    self._sock = sock;
    var alive = function () {
      if (self._sock !== sock) return;
      clearTimeout(self._watchdog);
      self._watchdog = setTimeout(function () {
        if (self._sock === sock) sock.close(SILENT, 'No heartbeat');
      }, self.silenceMs);
    };
    alive();
    sock.addEventListener('heartbeat', alive);
    sock.onopen = function () {
      alive();
      if (self._sock === sock) self._setState('open', sock.transport);
    };
    sock.onmessage = function (event) {
      alive();
      if (self._sock === sock) self._receive(event.data);
    };
    sock.onclose = function (event) {
      if (self._sock !== sock) return;
      clearTimeout(self._watchdog);
      self._sock = null;
      if (STOP_CODES.indexOf(event.code) >= 0) {
        self._setState('stopped', event);
        return;
      }
      // A broker that turns new sessions away while it drains says 3012 too: only a
      // connection that was serving comes back at once.
      var wait = event.code === RECONNECT_NOW && self._started ? RECONNECT_NOW_MS : self._delay;
      self._delay = Math.min(self._delay * 2, MAX_DELAY_MS);
      self._setState('closed', event);
      self._timer = setTimeout(function () { self._connect(); }, Math.random() * wait);
    };
  };

  BrokerClient.prototype._receive = function (envelope) {
    if (envelope === null || typeof envelope !== 'object') return;
    if ('o' in envelope && 'd' in envelope) {
      if (this.options.oncounter && isCounter(envelope.d)) {
        this._counter(envelope.d, envelope.o);
        return;
      }
      if (this.offset !== null && !after(envelope.o, this.offset)) return;
      this.offset = envelope.o;
      this._call('onmessage', envelope.d, envelope.o);
    } else if ('a' in envelope) {
      this._call('onannouncement', envelope.a);
    } else if (envelope.c) {
      this._delay = FIRST_DELAY_MS;
      this._started = true;
      if (envelope.c !== 'resumed') {
        if (envelope.c === 'gap') this._call('ongap', envelope.reason);
        // What the broker sends a start (counters, the replay tail) follows, at or before
        // envelope.o; live messages come after it.
        // In the same epoch, what it holds at or before this.offset was delivered already.
        if (envelope.epoch !== this.epoch) {
          this.offset = null;
          this._counters = {};
        }
        this._joined = envelope.o;
      }
      this.epoch = envelope.epoch;
    }
  };

  BrokerClient.prototype._counter = function (counter, offset) {
    var shown = this._counters[counter.counter];
    if (shown !== undefined && !after(offset, shown)) return;
    this._counters[counter.counter] = offset;
    if (this.offset === null || after(offset, this.offset)) this.offset = offset;
    this._call('oncounter', counter.counter, counter.value);
  };

  BrokerClient.prototype.send = function (message) {
    if (!this._sock || this._sock.readyState !== SockJS.OPEN) return false;
    this._sock.send(message);
    return true;
  };

  BrokerClient.prototype.close = function () {
    clearTimeout(this._timer);
    clearTimeout(this._watchdog);
    this._timer = null;
    var sock = this._sock;
    this._sock = null;
    if (sock) sock.close();
    this._setState('stopped');
  };

  root.BrokerClient = BrokerClient;
}(typeof window !== 'undefined' ? window : this));
