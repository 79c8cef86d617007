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
       silenceMs: 35000,                                // optional, see below
       getToken: function () { ... }                    // optional: private rooms, see below
     });
     client.send('hello');
     client.close();

   Named rooms, several over one connection, each with its own callbacks:

     var client = new BrokerClient('https://example.com/broadcast', {
       rooms: {
         'spring': function (message, offset) { ... },            // onmessage alone
         'autumn': { onmessage: ..., oncounter: ..., ongap: ..., onannouncement: ... }
       },
       onstatechange: function (state, detail) { ... }
     });
     client.rooms.spring.epoch, client.rooms.spring.offset        // where each room stands

   Rules it keeps:
   - Without rooms it is in the default room, the room of every URL without ?rooms=. With
     rooms (names of 1 to 64 of A-Z a-z 0-9 _ - . :) it joins those rooms, and only those, in one
     SockJS session (?rooms=a,b): each room's messages, counters' totals, gaps and announcements
     (its own audience) go to that room's callbacks only. A room's callbacks are a function
     (its onmessage) or an object of onmessage, oncounter, ongap and onannouncement; one it
     lacks falls back to the client's option of that name, called with the room's name as one
     more, last, argument. A client of several rooms only listens: send() returns false (the
     broker would drop it); a client of one named room sends in that room.
   - It asks for positions (?positions=1) and keeps each room's epoch and the newest offset
     it delivered; every reconnect asks to resume each room after them (&epoch=E&since=O for
     the default room, &epoch.NAME=E&since.NAME=O for a named one). The broker
     answers with every message after that offset, or with a gap (the history was lost, or
     is older than the broker keeps): ongap(reason) is called once for each gap, before what
     the broker sends after it: every counter's total and the last --replay messages (none by
     default: then only the counters), or, after a lost history (reason "epoch"), every
     message of the new history when the broker holds them all. What a page must show
     whatever it missed is best published as a counter, or under ?key= with --replay 1.
     Each room resumes, and is told its gaps, on its own.
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
     on a connection that was serving reconnects within 1 s, to any broker. 3014 (the
     broker holds too many rooms) is a broker's state, not the page's: it backs off, as
     the broker asks, and a proxy may send it to another broker.
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
     message, 1009 message too big, 3013 rooms refused: a bad name, no name, more rooms than
     the broker lets a session join, or rooms a cluster does not serve; 3015 token required,
     3016 token refused) stop it: state "stopped", with the close (its code and reason) as
     the detail, and no reconnect.
   - Private rooms (the broker's --private-rooms) take a token, a JWT the page's backend signs:
     getToken() returns it, or a Promise of it (the page fetches it from its backend, which
     knows who the user is). Before each connection the client asks getToken() for a token
     and sends it as the connection's first message, {"token": "<JWT>"}: never in the URL,
     which proxies log and sockjs-client repeats in every request of a polling session. A
     broker run without a token key (--token-secret or --token-public-key) refuses it, 3016,
     rather than relay it to the room: the client stops, saying so.
   - It reads the token's exp (its payload, not verified: the broker verifies) and, on the
     same session, sends a fresh token from getToken() when the later of two moments comes:
     half the token's remaining lifetime, or 60 s before its exp. A short token (seconds) is
     refreshed halfway, a long one a minute ahead; a hidden tab's timers may run late, and
     then the broker's 3017 below brings it back without a gap. At a refresh, getToken()
     failing, or giving no token of a later exp, changes nothing: the session runs until the
     broker closes it at exp.
   - 3017 (the session's token expired) asks getToken() once more and reconnects within 1 s,
     resuming, missing nothing the broker's history still holds. A client stops instead, with
     state "stopped" and a detail {reason: text}, when getToken() fails (a rejected Promise,
     or a throw: the page may no longer have a token), or gives a token already past its
     exp, or, after a 3017, one no later than the token that expired. A 3017 again before
     the broker started the new session, or on a client without getToken, stops it with that
     close as the detail. So a page whose tokens stop coming, or whose clock is wrong, stops:
     it never reconnects in a loop. A connection that fails for another reason (the network)
     comes back as above, with a fresh token.
*/
(function (root) {
  'use strict';

  var FIRST_DELAY_MS = 500;
  var MAX_DELAY_MS = 30000;
  var RECONNECT_NOW_MS = 1000;
  var RECONNECT_NOW = 3012;
  var STOP_CODES = [1003, 1007, 1009, 3013, 3015, 3016];
  var TOKEN_EXPIRED = 3017;
  // A token is refreshed at the later of half its remaining lifetime and this long before its exp.
  var REFRESH_AHEAD_MS = 60000;
  // The longest wait setTimeout takes (2^31 - 1 ms, 24.8 days): a longer one fires at once.
  var MAX_TIMER_MS = 2147483647;
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

  /* A JWT's exp in ms since the epoch, read without verifying it, or null if it has none. */
  function expiresAt(token) {
    try {
      var claims = JSON.parse(atob(String(token).split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
      return typeof claims.exp === 'number' ? claims.exp * 1000 : null;
    } catch (error) {
      return null;
    }
  }

  function own(object, name) {
    return Object.prototype.hasOwnProperty.call(object, name);
  }

  /* A room the client is in, and where it stands: name null is the default room. Its
     callbacks are handlers (for the default room, the client's options). */
  function Room(name, handlers) {
    this.name = name;
    this.handlers = typeof handlers === 'function' ? { onmessage: handlers } : (handlers || {});
    this.epoch = null;
    this.offset = null;
    this._joined = null;
    this._counters = {};
  }

  /* The query that resumes this room, '' before it was told where it starts. */
  Room.prototype.resumeQuery = function () {
    if (this.epoch === null) return '';
    // The newest offset delivered, or where the connection joined if the state it was given is older.
    var since = this.offset === null || after(this._joined, this.offset) ? this._joined : this.offset;
    var suffix = this.name === null ? '' : '.' + encodeURIComponent(this.name);
    return '&epoch' + suffix + '=' + encodeURIComponent(this.epoch) +
      '&since' + suffix + '=' + encodeURIComponent(since);
  };

  function BrokerClient(url, options) {
    this.url = url;
    this.options = options || {};
    this.silenceMs = this.options.silenceMs || (this.options.heartbeatMs || HEARTBEAT_MS) + LATE_HEARTBEAT_MS;
    // Named rooms, by name; none for the default room, which is this._only.
    this.rooms = {};
    var named = this.options.rooms;
    if (named) {
      for (var name in named) {
        if (own(named, name)) this.rooms[name] = new Room(name, named[name]);
      }
    }
    var names = Object.keys(this.rooms);
    this._names = named ? names : null;
    // The room whose messages come without a room's name: the default room, or a named room alone.
    this._only = !named ? new Room(null, this.options) : names.length === 1 ? this.rooms[names[0]] : null;
    this.state = 'connecting';
    this._delay = FIRST_DELAY_MS;
    this._timer = null;
    this._watchdog = null;
    this._refresh = null;
    this._sock = null;
    // The getToken() call whose answer is awaited (only the last one's counts), the exp of the
    // session's token, and whether the client came back after a 3017, until the broker starts it.
    this._asking = null;
    this._expires = null;
    this._renewing = false;
    this._connect();
  }

  /* The epoch and offset of the client's only room (the default room, or its one named room). */
  ['epoch', 'offset'].forEach(function (field) {
    Object.defineProperty(BrokerClient.prototype, field, {
      get: function () { return this._only ? this._only[field] : null; },
    });
  });

  /* Calls room's callback name with the arguments after name; a named room without one calls
     the client's option of that name, with the room's name last. */
  BrokerClient.prototype._call = function (room, name) {
    var args = Array.prototype.slice.call(arguments, 2);
    var callback = room.handlers[name];
    if (!callback && room.name !== null) {
      callback = this.options[name];
      args.push(room.name);
    }
    if (typeof callback === 'function') callback.apply(null, args);
  };

  BrokerClient.prototype._handles = function (room, name) {
    return room.handlers[name] || (room.name !== null && this.options[name]);
  };

  BrokerClient.prototype._setState = function (state, detail) {
    this.state = state;
    var callback = this.options.onstatechange;
    if (typeof callback === 'function') callback.call(null, state, detail);
  };

  BrokerClient.prototype._resumeUrl = function () {
    var query = 'positions=1';
    if (this._names) {
      query = 'rooms=' + this._names.map(encodeURIComponent).join(',') + '&' + query;
      for (var i = 0; i < this._names.length; i++) query += this.rooms[this._names[i]].resumeQuery();
    } else {
      query += this._only.resumeQuery();
    }
    return this.url + (this.url.indexOf('?') < 0 ? '?' : '&') + query;
  };

  /* Connect, with a token from getToken() when the client has it; stop if it gives none. */
  BrokerClient.prototype._connect = function () {
    var self = this;
    self._timer = null;
    if (!self.options.getToken) {
      self._open(null, null);
      return;
    }
    // After a 3017, the token must be later than the one that expired.
    var expired = self._renewing ? self._expires : null;
    self._askToken(function (token, expires) {
      if (expired !== null && (expires === null || expires <= expired)) {
        self._stop({ reason: 'getToken() gave no token later than the one that expired' });
      } else {
        self._open(token, expires);
      }
    }, function (reason) { self._stop({ reason: reason }); });
  };

  /* Call getToken(): then(token, expires), expires its exp in ms (null if it has none), or
     failed(reason) when it fails or gives a token past its exp. Only the last call answers. */
  BrokerClient.prototype._askToken = function (then, failed) {
    var self = this;
    var asking = {};
    self._asking = asking;
    var answer;
    try {
      answer = Promise.resolve(self.options.getToken());
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(function (token) {
      if (self._asking !== asking) return;
      self._asking = null;
      var expires = expiresAt(token);
      if (expires !== null && expires <= Date.now()) failed('getToken() gave a token past its exp');
      else then(String(token), expires);
    }, function (error) {
      if (self._asking !== asking) return;
      self._asking = null;
      failed('getToken() failed: ' + (error && error.message ? error.message : String(error)));
    });
  };

  /* Open a SockJS session; token (or null) is its first message. */
  BrokerClient.prototype._open = function (token, expires) {
    var self = this;
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
      if (self._sock !== sock) return;
      if (token !== null) {
        sock.send(JSON.stringify({ token: token }));
        self._refreshLater(sock, expires);
      }
      self._setState('open', sock.transport);
    };
    sock.onmessage = function (event) {
      alive();
      if (self._sock === sock) self._receive(event.data);
    };
    sock.onclose = function (event) {
      if (self._sock !== sock) return;
      clearTimeout(self._watchdog);
      clearTimeout(self._refresh);
      self._sock = null;
      var renew = event.code === TOKEN_EXPIRED && Boolean(self.options.getToken) && !self._renewing;
      if (STOP_CODES.indexOf(event.code) >= 0 || event.code === TOKEN_EXPIRED && !renew) {
        self._setState('stopped', event);
        return;
      }
      if (renew) self._renewing = true;
      // A broker that turns new sessions away while it drains says 3012 too: only a
      // connection that was serving comes back at once.
      var wait = renew || event.code === RECONNECT_NOW && self._started ? RECONNECT_NOW_MS : self._delay;
      self._delay = Math.min(self._delay * 2, MAX_DELAY_MS);
      self._setState('closed', event);
      self._timer = setTimeout(function () { self._connect(); }, Math.random() * wait);
    };
  };

  /* On the session sock, send a fresh token before the one of exp expires (see the rules). */
  BrokerClient.prototype._refreshLater = function (sock, expires) {
    var self = this;
    self._expires = expires;
    if (expires === null) return;
    var lifetime = expires - Date.now();
    self._refresh = setTimeout(function () {
      self._askToken(function (token, fresh) {
        if (self._sock !== sock || fresh === null || fresh <= expires) return;
        sock.send(JSON.stringify({ token: token }));
        self._refreshLater(sock, fresh);
      }, function () {});
    }, Math.min(Math.max(lifetime / 2, lifetime - REFRESH_AHEAD_MS), MAX_TIMER_MS));
  };

  BrokerClient.prototype._receive = function (envelope) {
    if (envelope === null || typeof envelope !== 'object') return;
    // A session of several rooms says each message's room, first: {"r": NAME, ...}.
    var room = this._only;
    if (!room && typeof envelope.r === 'string' && own(this.rooms, envelope.r)) room = this.rooms[envelope.r];
    if (!room) return;
    if ('o' in envelope && 'd' in envelope) {
      if (this._handles(room, 'oncounter') && isCounter(envelope.d)) {
        this._counter(room, envelope.d, envelope.o);
        return;
      }
      if (room.offset !== null && !after(envelope.o, room.offset)) return;
      room.offset = envelope.o;
      this._call(room, 'onmessage', envelope.d, envelope.o);
    } else if ('a' in envelope) {
      this._call(room, 'onannouncement', envelope.a);
    } else if (envelope.c) {
      this._delay = FIRST_DELAY_MS;
      this._started = true;
      this._renewing = false;
      if (envelope.c !== 'resumed') {
        if (envelope.c === 'gap') this._call(room, 'ongap', envelope.reason);
        // What the broker sends a start (counters, the replay tail) follows, at or before
        // envelope.o; live messages come after it.
        // In the same epoch, what it holds at or before room.offset was delivered already.
        if (envelope.epoch !== room.epoch) {
          room.offset = null;
          room._counters = {};
        }
        room._joined = envelope.o;
      }
      room.epoch = envelope.epoch;
    }
  };

  BrokerClient.prototype._counter = function (room, counter, offset) {
    var shown = room._counters[counter.counter];
    if (shown !== undefined && !after(offset, shown)) return;
    room._counters[counter.counter] = offset;
    if (room.offset === null || after(offset, room.offset)) room.offset = offset;
    this._call(room, 'oncounter', counter.counter, counter.value);
  };

  /* Publish message in the client's room (in chat mode): false, sending nothing, while it is not
     open, or in a client of several rooms, which only listens. */
  BrokerClient.prototype.send = function (message) {
    if (!this._only || !this._sock || this._sock.readyState !== SockJS.OPEN) return false;
    this._sock.send(message);
    return true;
  };

  BrokerClient.prototype.close = function () {
    this._stop();
  };

  BrokerClient.prototype._stop = function (detail) {
    clearTimeout(this._timer);
    clearTimeout(this._watchdog);
    clearTimeout(this._refresh);
    this._timer = null;
    this._asking = null;
    var sock = this._sock;
    this._sock = null;
    if (sock) sock.close();
    this._setState('stopped', detail);
  };

  root.BrokerClient = BrokerClient;
}(typeof window !== 'undefined' ? window : this));
