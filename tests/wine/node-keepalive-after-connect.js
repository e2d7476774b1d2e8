// Test scaffolding for Node.js for Windows under Wine 8, never shipped: loaded into the agents'
// node.exe with NODE_OPTIONS=--require by tests/wine/real-agents.sh.
//
// Wine 8.0's ws2_32 answers setsockopt(IPPROTO_TCP, TCP_KEEPALIVE | TCP_KEEPINTVL |
// TCP_KEEPCNT) with WSAENOPROTOOPT (10042); Windows 10 1709 and later have all three. libuv
// 1.51 (Node 22) sets them in uv_tcp_keepalive, and when keep-alive is asked for before the
// socket has connected it applies them as it connects, so the connect itself fails: `connect
// UNKNOWN 127.0.0.1:PORT` (errno -4094). Node's fetch (undici) asks for keep-alive right after
// net.connect, so every fetch fails that way (Claude Code: "API Error: Unable to connect to
// API (UNKNOWN)"; Gemini CLI: "fetch failed"), while http.get, which asks after connecting,
// works (the error of a connected socket's setKeepAlive is ignored by Node).
//
// This moves a keep-alive asked for while connecting to the moment the socket has connected,
// which is what a connected socket does already. Nothing else changes.
"use strict";
const net = require("net");
const setKeepAlive = net.Socket.prototype.setKeepAlive;
net.Socket.prototype.setKeepAlive = function (enable, initialDelay) {
  if (this.connecting) {
    this.once("connect", () => setKeepAlive.call(this, enable, initialDelay));
    return this;
  }
  return setKeepAlive.call(this, enable, initialDelay);
};
