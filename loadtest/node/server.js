// sockjs-node broadcast server: one room, every message goes to every connection.
// Usage: node server.js [--host 127.0.0.1] [--port 0]
"use strict";

const http = require("http");
const sockjs = require("sockjs");

function option(name, fallback) {
  const index = process.argv.indexOf("--" + name);
  return index >= 0 && index + 1 < process.argv.length ? process.argv[index + 1] : fallback;
}

const host = option("host", "127.0.0.1");
const port = Number(option("port", "0"));
const prefix = "/broadcast";
const connections = new Set();

const broadcast = sockjs.createServer({ prefix: prefix, log: () => {} });
broadcast.on("connection", (conn) => {
  connections.add(conn);
  conn.on("data", (message) => {
    for (const other of connections) {
      other.write(message);
    }
  });
  conn.on("close", () => connections.delete(conn));
});

const server = http.createServer();
broadcast.installHandlers(server);
server.on("error", (error) => {
  console.error("sockjs-node: " + error.message);
  process.exit(1);
});
server.listen(port, host, () => {
  const address = server.address();
  const shown = address.family === "IPv6" ? "[" + address.address + "]" : address.address;
  console.log("sockjs-node listening on http://" + shown + ":" + address.port + prefix);
});
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));
