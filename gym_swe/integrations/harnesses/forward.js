// gym_swe's forwarder, run inside a sandbox by the Node gym_swe installed, before the harness:
//   node forward.js SOCKET PORT COMMAND...
// It listens on the sandbox's own loopback (the sandbox has no network), carries each connection to the
// proxy's unix socket SOCKET bound into the sandbox, and runs COMMAND (the harness) as its child once it
// listens, exiting as the child exits.
const net = require("net");
const os = require("os");
const { spawn } = require("child_process");

const [socketPath, port, ...command] = process.argv.slice(2);

const server = net.createServer({ allowHalfOpen: true }, (client) => {
  const upstream = net.connect({ path: socketPath, allowHalfOpen: true });
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const end of [client, upstream]) {
    end.on("error", close);
    end.on("close", close);
  }
  client.pipe(upstream);
  upstream.pipe(client);
});

server.listen(Number(port), "127.0.0.1", () => {
  const child = spawn(command[0], command.slice(1), { stdio: "inherit" });
  for (const name of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(name, () => child.kill(name));
  }
  child.on("error", (error) => {
    console.error(`gym_swe: cannot start ${command[0]}: ${error.message}`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => {
    process.exit(code !== null ? code : 128 + (os.constants.signals[signal] || 0));
  });
});
