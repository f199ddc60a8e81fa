import { createServer, type IncomingMessage, type Server, type ServerResponse } from "http";

/**
 * A scripted OpenAI-compatible provider on loopback: `GET /v1/models` lists `models`; a chat
 * completion streams the text `answer` gives for its request (kept in `completions`): in one
 * chunk, or word by word `pace` ms apart, and then a usage report.
 */
export type Provider = { server: Server; url: string; completions: any[]; listings: number };

/** What a completion answers: text, or a call of one of the agent's tools. */
export type Answer = string | { tool: string; args: object };

export function provider(models: string[], answer: (request: any) => Answer, pace = 0): Promise<Provider> {
  const state: Provider = { server: null as unknown as Server, url: "", completions: [], listings: 0 };
  state.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/v1/models") {
        state.listings += 1;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: models.map((id) => ({ id, object: "model" })) }));
        return;
      }
      const parsed = JSON.parse(body || "{}");
      state.completions.push(parsed);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      const said = answer(parsed);
      if (typeof said !== "string") {
        res.write(chunk({ tool_calls: [{ index: 0, id: `call_${state.completions.length}`, type: "function", function: { name: said.tool, arguments: JSON.stringify(said.args) } }] }));
        res.write(chunk({}, "tool_calls"));
        res.end("data: [DONE]\n\n");
        return;
      }
      const text = said;
      const end = () => {
        res.write(chunk({}, "stop"));
        res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 12, completion_tokens: 34 } })}\n\n`);
        res.end("data: [DONE]\n\n");
      };
      if (pace <= 0) {
        res.write(chunk({ content: text }));
        end();
        return;
      }
      const words = text.match(/\S+\s*/g) ?? [text];
      let i = 0;
      const next = () => {
        if (res.destroyed) return;
        if (i === words.length) return end();
        res.write(chunk({ content: words[i++] }));
        setTimeout(next, pace);
      };
      next();
    });
  });
  return new Promise((done) =>
    state.server.listen(0, "127.0.0.1", () => {
      const address = state.server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      state.url = `http://127.0.0.1:${port}/v1`;
      done(state);
    }),
  );
}
