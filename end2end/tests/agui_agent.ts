import { createServer, type IncomingMessage, type Server, type ServerResponse } from "http";
import type { BaseEvent, RunAgentInput } from "@ag-ui/core";
import { EventEncoder } from "@ag-ui/encoder";

/**
 * A scripted AG-UI agent on loopback: every `RunAgentInput` POSTed to it (kept in `inputs`)
 * is answered with the events `script` gives for it, encoded by the protocol's own encoder and
 * written in pieces cut where a reader is most likely to go wrong.
 */
export type AguiAgent = { server: Server; url: string; inputs: RunAgentInput[]; accepts: string[] };

/**
 * Where the bytes of one event's frame are cut: inside its first multi-byte UTF-8 character
 * (when it has one), in the middle of its JSON, and between the two newlines that end it.
 */
function cuts(frame: Uint8Array): number[] {
  const at = new Set<number>();
  const multi = frame.findIndex((b) => b >= 0xc0);
  if (multi > 0) at.add(multi + 1);
  at.add(Math.floor(frame.length / 2));
  at.add(frame.length - 1);
  return [...at].filter((i) => i > 0 && i < frame.length).sort((a, b) => a - b);
}

/**
 * The writes a stream of frames is sent in: each frame in its pieces, the last piece of one
 * frame sent together with the first piece of the next, so no write ends where a frame does.
 */
export function awkwardPieces(frames: Uint8Array[]): Buffer[] {
  const pieces: Buffer[] = [];
  let carry: Buffer = Buffer.alloc(0);
  for (const frame of frames) {
    const bytes = Buffer.from(frame);
    let from = 0;
    for (const cut of cuts(bytes)) {
      pieces.push(Buffer.concat([carry, bytes.subarray(from, cut)]));
      carry = Buffer.alloc(0);
      from = cut;
    }
    carry = bytes.subarray(from);
  }
  if (carry.length > 0) pieces.push(carry);
  return pieces;
}

export function aguiAgent(script: (input: RunAgentInput) => BaseEvent[], pauseMs = 15): Promise<AguiAgent> {
  const state: AguiAgent = { server: null as unknown as Server, url: "", inputs: [], accepts: [] };
  state.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      if (req.method !== "POST") {
        res.writeHead(405).end();
        return;
      }
      const input = JSON.parse(Buffer.concat(chunks).toString("utf8")) as RunAgentInput;
      state.inputs.push(input);
      state.accepts.push(req.headers.accept ?? "");
      const encoder = new EventEncoder({ accept: req.headers.accept });
      res.writeHead(200, { "content-type": encoder.getContentType(), "cache-control": "no-cache" });
      res.flushHeaders();
      for (const piece of awkwardPieces(script(input).map((e) => encoder.encodeBinary(e)))) {
        if (res.destroyed) return;
        res.write(piece);
        await new Promise((r) => setTimeout(r, pauseMs));
      }
      res.end();
    });
  });
  return new Promise((done) =>
    state.server.listen(0, "127.0.0.1", () => {
      const address = state.server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      state.url = `http://127.0.0.1:${port}/agent`;
      done(state);
    }),
  );
}
