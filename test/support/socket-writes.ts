import net from "node:net";

/**
 * Counts the writes this process makes to sockets whose remote port is
 * `port` (a database server's) from now until `stop()`: each is one write
 * system call of the socket, however many protocol messages it carries.
 */
export function countSocketWrites(port: number): { count(): number; stop(): void } {
  const proto = net.Socket.prototype as unknown as {
    _write(chunk: unknown, encoding: unknown, callback: unknown): unknown;
    _writev(chunks: unknown, callback: unknown): unknown;
  };
  const { _write: write, _writev: writev } = proto;
  let writes = 0;
  proto._write = function (this: net.Socket, chunk, encoding, callback) {
    if (this.remotePort === port) writes++;
    return write.call(this, chunk, encoding, callback);
  };
  proto._writev = function (this: net.Socket, chunks, callback) {
    if (this.remotePort === port) writes++;
    return writev.call(this, chunks, callback);
  };
  return {
    count: () => writes,
    stop() {
      proto._write = write;
      proto._writev = writev;
    },
  };
}
