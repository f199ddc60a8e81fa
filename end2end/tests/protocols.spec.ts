import { test, expect } from "./fixtures";
import type { APIRequestContext } from "@playwright/test";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { HttpAgent } from "@ag-ui/client";
import { EventType, type Event as AguiEvent, type Message, type RunAgentInput } from "@ag-ui/core";
import {
  DefaultChatTransport,
  getToolName,
  isReasoningUIPart,
  isTextUIPart,
  isToolUIPart,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import { aguiAgent, type AguiAgent } from "./agui_agent";
import { freePort, kill9, startServer, waitHealthy } from "./own_server";
import { hydrated, lastTurn, newSession, send, startTurn, waitRunEnd } from "./support";

// Anchorage through other protocols' own clients: the official AG-UI client (`@ag-ui/client`,
// which validates every event with the protocol's schemas, verifies their order and builds the
// conversation with its default reducer) reads `POST /api/agui` and `GET /api/runs/{id}/agui`;
// the AI SDK's own stream parser and message builder read `POST /api/ai-sdk/chat` and its
// resume. What each builds must be the turn Anchorage settled and journaled. Then the other
// way round: Anchorage's `agui` backend against a scripted AG-UI agent, in the browser.

const API_ONLY = "API only: once, on the desktop project";

// The protocol's own schema of a run's input (a subpath export, which this tsconfig's module
// resolution does not see; Node's does).
const { RunAgentInputSchema } = require("@ag-ui/core/schemas") as { RunAgentInputSchema: { parse(input: unknown): RunAgentInput } };

// ---------------------------------------------------------------------------------------------
// Our own record of a run: its journal and its settled message.

type JournalRow = { seq: number; kind: string; payload: Record<string, any> };
type ToolRow = { tid: string; name: string; args: unknown; preview: string; isError: boolean };
type Ours = {
  sessionId: string;
  runId: string;
  terminal: string;
  /** The settled assistant message. */
  answerId: string;
  answer: string;
  rows: JournalRow[];
  /** Every token the run streamed, in order (its interim prose and its answer). */
  tokens: string;
  reasoning: string;
  tools: ToolRow[];
};

async function journalRows(request: APIRequestContext, base: string, run: string): Promise<JournalRow[]> {
  const rows: JournalRow[] = [];
  let after = 0;
  for (;;) {
    const res = await request.get(`${base}/api/chat/journal?run_id=${run}&after=${after}`);
    expect(res.ok()).toBeTruthy();
    const page = await res.json();
    rows.push(...page.events);
    if (page.next == null) return rows;
    after = page.next;
  }
}

/** The run once it has ended, as Anchorage keeps it. */
async function ours(request: APIRequestContext, base: string, run: string): Promise<Ours> {
  const status = await waitRunEnd(request, run);
  const rows = await journalRows(request, base, run);
  const session = (await (await request.get(`${base}/api/session?session_id=${status.session_id}`)).json()).session;
  const settled = session.messages.find((m: any) => m.role === "assistant" && m.run_id === run);
  expect(settled, "the run's settled message").toBeTruthy();
  const tools = new Map<string, ToolRow>();
  for (const r of rows.filter((r) => r.kind === "tool" || r.kind === "tool_complete")) {
    const tid = r.payload.tid as string;
    const tool = tools.get(tid) ?? { tid, name: r.payload.name, args: r.payload.args, preview: "", isError: false };
    if (r.kind === "tool_complete") {
      tool.preview = r.payload.preview ?? "";
      tool.isError = r.payload.is_error === true;
    }
    tools.set(tid, tool);
  }
  const text = (kind: string) =>
    rows
      .filter((r) => r.kind === kind)
      .map((r) => r.payload.text)
      .join("");
  return {
    sessionId: status.session_id,
    runId: run,
    terminal: status.terminal_state,
    answerId: settled.id,
    answer: settled.content,
    rows,
    tokens: text("token"),
    reasoning: text("reasoning"),
    tools: [...tools.values()],
  };
}

/** The session cookie of `request` (signed in), as a header for clients of our own. */
async function credentials(request: APIRequestContext): Promise<Record<string, string>> {
  const { cookies } = await request.storageState();
  return cookies.length > 0 ? { cookie: cookies.map((c) => `${c.name}=${c.value}`).join("; ") } : {};
}

// ---------------------------------------------------------------------------------------------
// AG-UI: what the official client builds.

/** Runs `fn` with the console's warnings and errors kept (the AG-UI client reports there). */
async function keepingWarnings<T>(fn: () => Promise<T>): Promise<{ value: T; warnings: string[] }> {
  const warnings: string[] = [];
  const { warn, error } = console;
  console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(" "));
  console.error = (...args: unknown[]) => void warnings.push(args.map(String).join(" "));
  try {
    return { value: await fn(), warnings };
  } finally {
    console.warn = warn;
    console.error = error;
  }
}

/** An `HttpAgent` that reads an existing run (`GET`) instead of starting one. */
class RunReader extends HttpAgent {
  protected requestInit(): RequestInit {
    return {
      method: "GET",
      headers: { ...this.headers, Accept: "text/event-stream" },
      signal: this.abortController.signal,
    };
  }
}

type AguiRun = { messages: Message[]; events: AguiEvent[]; result: unknown; warnings: string[] };

async function runAgui(agent: HttpAgent, runId: string, also: Parameters<HttpAgent["runAgent"]>[1] = {}): Promise<AguiRun> {
  const events: AguiEvent[] = [];
  const { value, warnings } = await keepingWarnings(() =>
    agent.runAgent({ runId }, { ...also, onEvent: ({ event }) => void events.push(event as AguiEvent) }),
  );
  return { messages: agent.messages, events, result: value.result, warnings };
}

/** What an AG-UI conversation says of one turn, in our terms. */
function aguiView(messages: Message[]) {
  const texts: string[] = [];
  const calls: { tid: string; name: string; args: unknown }[] = [];
  const results = new Map<string, unknown>();
  let reasoning = "";
  for (const m of messages) {
    if (m.role === "assistant") {
      if (m.content) texts.push(m.content);
      for (const c of m.toolCalls ?? []) calls.push({ tid: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) });
    } else if (m.role === "tool") {
      results.set(m.toolCallId, m.content);
    } else if (m.role === "reasoning") {
      reasoning += m.content;
    }
  }
  return { texts, calls, results, reasoning };
}

/** The events' own promises: order, ids, our metadata, and our kinds behind CUSTOM. */
function checkEvents(run: AguiRun, o: Ours, thread: string, runId: string, outcome = "success") {
  const [first, ...rest] = run.events;
  expect(first).toMatchObject({ type: EventType.RUN_STARTED, threadId: thread, runId });
  const last = run.events[run.events.length - 1];
  expect(last).toMatchObject({
    type: EventType.RUN_FINISHED,
    threadId: thread,
    runId,
    outcome: { type: outcome },
    result: { terminal_state: o.terminal },
  });
  const kinds = new Map(o.rows.map((r) => [r.seq, r.kind]));
  let seq = 0;
  for (const e of rest) {
    expect(typeof e.timestamp, `${e.type} has a timestamp`).toBe("number");
    const mine = e.metadata?.anchorage;
    expect(mine?.run_id, `${e.type} names our run`).toBe(o.runId);
    expect(kinds.has(mine.seq), `${e.type} names a row of the journal`).toBeTruthy();
    expect(mine.seq).toBeGreaterThanOrEqual(seq);
    seq = mine.seq;
    if (e.type === EventType.CUSTOM) expect(e.name).toBe(kinds.get(mine.seq));
  }
  // A tool call sits on the assistant message it names as its parent, or on one of its own.
  for (const e of run.events) {
    if (e.type !== EventType.TOOL_CALL_START) continue;
    const holder = run.messages.find((m) => m.role === "assistant" && m.toolCalls?.some((c) => c.id === e.toolCallId));
    expect(holder?.id).toBe(e.parentMessageId ?? e.toolCallId);
  }
}

/** The client's conversation is the turn we settled and journaled. */
function checkConversation(messages: Message[], o: Ours) {
  const view = aguiView(messages);
  // Nothing lost, nothing twice: the assistant's texts are every token streamed…
  expect(view.texts.join("")).toBe(o.tokens);
  // …and the last of them, after the last tool, is the answer that settled.
  expect(view.texts[view.texts.length - 1]).toBe(o.answer);
  expect(view.reasoning).toBe(o.reasoning);
  expect(view.calls.map(({ name, args }) => ({ name, args }))).toEqual(o.tools.map(({ name, args }) => ({ name, args })));
  // A call's id is (or holds) the one we journaled it by.
  view.calls.forEach((c, i) => expect(c.tid).toContain(o.tools[i].tid));
  expect(view.calls.map((c) => view.results.get(c.tid))).toEqual(o.tools.map((t) => t.preview));
}

const USER = (id: string, content: string): Message => ({ id, role: "user", content });

/** The RUN_FINISHED outcome of a run the user stopped. */
const STOPPED_OUTCOME = "cancelled";

// One finished run, read the two ways: started through POST /api/agui, then read again.
test.describe("AG-UI through the official client", () => {
  test.describe.configure({ mode: "serial" });
  let tools: { run: string; session: string; messages: Message[]; user: Message } | undefined;

  test("HttpAgent runs /demo tools and builds the turn we settled", async ({ request, baseURL }, testInfo) => {
    test.skip(testInfo.project.name === "phone", API_ONLY);
    const thread = `agui-thread-${Date.now()}`;
    const clientRun = `client-run-${Date.now()}`;
    const user = USER(`user-${Date.now()}`, "/demo tools");
    const agent = new HttpAgent({ url: `${baseURL}/api/agui`, headers: await credentials(request), threadId: thread });
    agent.messages = [user];
    const run = await runAgui(agent, clientRun);
    expect(run.warnings, "the client warned of nothing").toEqual([]);

    const ourRun = run.events[1]?.metadata?.anchorage?.run_id as string;
    const o = await ours(request, baseURL!, ourRun);
    expect(o.terminal).toBe("completed");
    expect(run.result).toEqual({ terminal_state: "completed" });
    checkEvents(run, o, thread, clientRun);
    checkConversation(run.messages, o);
    // How the reducer laid the turn out: each reasoning its own message; the first and third
    // tools on assistant messages of their own (nothing was said before them); the second on
    // the text it followed; each result right after its call; the answer last.
    expect(run.messages.map((m) => m.role)).toEqual([
      "user", "reasoning", "assistant", "tool", "assistant", "tool", "reasoning", "assistant", "tool", "assistant",
    ]);
    const interim = run.messages[4];
    expect(interim.role === "assistant" && interim.toolCalls?.map((c) => c.function.name)).toEqual(["read_file"]);
    // The failed tool's message is its error, as we keep it.
    expect(o.tools.map((t) => t.isError)).toEqual([false, true, false]);
    tools = { run: ourRun, session: o.sessionId, messages: run.messages, user };
  });

  test("GET /api/runs/{id}/agui of the finished run builds the same conversation", async ({ request, baseURL }, testInfo) => {
    test.skip(testInfo.project.name === "phone", API_ONLY);
    expect(tools, "the /demo tools run of the test before").toBeTruthy();
    const { run, session, messages, user } = tools!;
    const reader = new RunReader({ url: `${baseURL}/api/runs/${run}/agui`, headers: await credentials(request), threadId: session });
    reader.messages = [user];
    const read = await runAgui(reader, run);
    expect(read.warnings).toEqual([]);
    const o = await ours(request, baseURL!, run);
    checkEvents(read, o, session, run);
    // The very same messages, ids and all.
    expect(read.messages).toEqual(messages);
  });
});

// A thread of several turns, a live run, a stopped one: each on a run of its own.

test("a second turn in the same thread is a turn of its own", async ({ request, baseURL }, testInfo) => {
  test.skip(testInfo.project.name === "phone", API_ONLY);
  // The client keeps the thread's messages and applies the next run onto them: a tool call id
  // or message id the first run used, used again, lands on the first run's messages.
  const agent = new HttpAgent({ url: `${baseURL}/api/agui`, headers: await credentials(request), threadId: `agui-two-${Date.now()}` });
  agent.messages = [USER(`user-1-${Date.now()}`, "/demo tools")];
  const first = await runAgui(agent, `client-run-1-${Date.now()}`);
  const before = structuredClone(agent.messages);
  agent.messages = [...agent.messages, USER(`user-2-${Date.now()}`, "/demo tools")];
  const second = await runAgui(agent, `client-run-2-${Date.now()}`);
  expect(first.warnings).toEqual([]);
  expect(second.warnings).toEqual([]);
  // The first turn is as it was…
  expect(agent.messages.slice(0, before.length)).toEqual(before);
  // …the second is all after it, ids of its own…
  const ids = agent.messages.map((m) => m.id);
  expect(new Set(ids).size, `message ids are unique: ${ids.join(", ")}`).toBe(ids.length);
  // …and is the turn we settled.
  const o = await ours(request, baseURL!, second.events[1]?.metadata?.anchorage?.run_id);
  checkConversation(agent.messages.slice(before.length + 1), o);
});

test("GET /api/runs/{id}/agui follows a live run to RUN_FINISHED", async ({ request, baseURL }, testInfo) => {
  test.skip(testInfo.project.name === "phone", API_ONLY);
  const session = await newSession(request);
  const run = await startTurn(request, session, "/demo long 300");
  const status = async () => (await (await request.get(`${baseURL}/api/chat/stream/status?run_id=${run}`)).json()).active;
  let liveAtStart: boolean | undefined;
  const arrivals: number[] = [];
  const reader = new RunReader({ url: `${baseURL}/api/runs/${run}/agui`, headers: await credentials(request), threadId: session });
  const read = await runAgui(reader, run, {
    onRunStartedEvent: async () => void (liveAtStart = await status()),
    onTextMessageContentEvent: () => void arrivals.push(Date.now()),
  });
  expect(read.warnings).toEqual([]);
  expect(liveAtStart, "the run was still going when the stream opened").toBe(true);
  // It came as it was made, not at once.
  expect(arrivals[arrivals.length - 1] - arrivals[0]).toBeGreaterThan(500);
  const o = await ours(request, baseURL!, run);
  checkEvents(read, o, session, run);
  expect(read.result).toEqual({ terminal_state: "completed" });
  expect(arrivals).toHaveLength(300);
  expect(read.messages).toHaveLength(1);
  expect(read.messages[0]).toMatchObject({ role: "assistant", content: o.answer });
  expect(o.answer).toBe(Array.from({ length: 300 }, (_, i) => `w${i} `).join(""));
});

test("a stopped run's AG-UI stream ends in RUN_FINISHED, cancelled, with what it had said", async ({ request, baseURL }, testInfo) => {
  test.skip(testInfo.project.name === "phone", API_ONLY);
  const session = await newSession(request);
  const run = await startTurn(request, session, "/demo long 300");
  const reader = new RunReader({ url: `${baseURL}/api/runs/${run}/agui`, headers: await credentials(request), threadId: session });
  let stopped = false;
  const read = await runAgui(reader, run, {
    onTextMessageContentEvent: async ({ textMessageBuffer }) => {
      if (!stopped && textMessageBuffer.length > 40) {
        stopped = true;
        expect((await request.post(`${baseURL}/api/chat/cancel`, { data: { run_id: run } })).ok()).toBeTruthy();
      }
    },
  });
  expect(read.warnings).toEqual([]);
  const o = await ours(request, baseURL!, run);
  expect(o.terminal).toBe("cancelled");
  // RUN_FINISHED with AG-UI 1.0's own outcome for it, `{type: "cancelled"}` (so the client
  // does not take the open call as one for it to answer), its result naming our state.
  checkEvents(read, o, session, run, STOPPED_OUTCOME);
  expect(read.messages[0]).toMatchObject({ role: "assistant", content: o.tokens });
  expect(o.tokens.length).toBeLessThan(Array.from({ length: 300 }, (_, i) => `w${i} `).join("").length);
});

// ---------------------------------------------------------------------------------------------
// The AI SDK: its own parser and message builder.

type ChatRead = { message: UIMessage; chunks: UIMessageChunk[]; raw: string };

/** Reads a UI message stream the way the AI SDK's chat does; the message it ends with. */
async function readChat(body: ReadableStream<Uint8Array>): Promise<ChatRead> {
  const [forParser, forText] = body.tee();
  const rawText = new Response(forText).text();
  const chunks: UIMessageChunk[] = [];
  const parsed = parseJsonEventStream({ stream: forParser, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        chunks.push(result.value);
        controller.enqueue(result.value);
      },
    }),
  );
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: parsed, terminateOnError: true })) message = m;
  expect(message, "the stream built a message").toBeTruthy();
  return { message: message!, chunks, raw: await rawText };
}

function checkMessage(read: ChatRead, o: Ours) {
  const { message, chunks, raw } = read;
  expect(message.id).toBe(o.answerId);
  expect(message.id).toBe(`msg-${o.runId}`);
  expect(message.role).toBe("assistant");
  expect(message.metadata).toEqual({ runId: o.runId, sessionId: o.sessionId });
  const texts = message.parts.filter(isTextUIPart);
  expect(texts.map((p) => p.text).join("")).toBe(o.tokens);
  expect(texts[texts.length - 1].text).toBe(o.answer);
  expect(texts.every((p) => p.state === "done")).toBeTruthy();
  expect(
    message.parts
      .filter(isReasoningUIPart)
      .map((p) => p.text)
      .join(""),
  ).toBe(o.reasoning);
  const tools = message.parts.filter(isToolUIPart).map((p) => ({
    tid: p.toolCallId,
    name: getToolName(p),
    args: p.input,
    preview: p.state === "output-error" ? p.errorText : p.state === "output-available" ? p.output : `(${p.state})`,
    isError: p.state === "output-error",
  }));
  expect(tools.map(({ tid: _, ...rest }) => rest)).toEqual(o.tools.map(({ tid: _, ...rest }) => rest));
  tools.forEach((t, i) => expect(t.tid).toContain(o.tools[i].tid));
  expect(chunks[0]).toEqual({ type: "start", messageId: o.answerId, messageMetadata: { runId: o.runId, sessionId: o.sessionId } });
  expect(chunks[chunks.length - 1]).toEqual({ type: "finish", finishReason: "stop" });
  expect(raw.endsWith("data: [DONE]\n\n")).toBeTruthy();
}

test.describe("the AI SDK's own stream reader", () => {
  test("POST /api/ai-sdk/chat of /demo tools builds the message we settled", async ({ request, baseURL }, testInfo) => {
    test.skip(testInfo.project.name === "phone", API_ONLY);
    const chat = `ai-sdk-chat-${Date.now()}`;
    const res = await fetch(`${baseURL}/api/ai-sdk/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(await credentials(request)) },
      body: JSON.stringify({
        id: chat,
        messages: [{ id: `user-${Date.now()}`, role: "user", parts: [{ type: "text", text: "/demo tools" }] }],
        trigger: "submit-message",
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const read = await readChat(res.body!);
    const start = read.chunks[0] as { messageMetadata: { runId: string; sessionId: string } };
    const o = await ours(request, baseURL!, start.messageMetadata.runId);
    expect(o.terminal).toBe("completed");
    checkMessage(read, o);
    expect(read.message.parts.filter(isToolUIPart).map((p) => p.state)).toEqual(["output-available", "output-error", "output-available"]);
  });

  test("GET /api/ai-sdk/chat/{id}/stream resumes a running turn from its start; 204 when none runs", async ({ request, baseURL }, testInfo) => {
    test.skip(testInfo.project.name === "phone", API_ONLY);
    const chat = `ai-sdk-resume-${Date.now()}`;
    const headers = await credentials(request);
    const transport = new DefaultChatTransport({ api: `${baseURL}/api/ai-sdk/chat`, headers });
    // A chat nobody used runs nothing.
    expect(await transport.reconnectToStream({ chatId: chat })).toBeNull();

    // The turn starts; its stream is dropped unread, as a closed tab would.
    const abort = new AbortController();
    const started = await fetch(`${baseURL}/api/ai-sdk/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({
        id: chat,
        messages: [{ id: `user-${Date.now()}`, role: "user", parts: [{ type: "text", text: "/demo long 300" }] }],
        trigger: "submit-message",
      }),
      signal: abort.signal,
    });
    expect(started.status).toBe(200);
    abort.abort();

    const res = await fetch(`${baseURL}/api/ai-sdk/chat/${encodeURIComponent(chat)}/stream`, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    const read = await readChat(res.body!);
    const start = read.chunks[0] as { messageMetadata: { runId: string } };
    const o = await ours(request, baseURL!, start.messageMetadata.runId);
    expect(o.terminal).toBe("completed");
    checkMessage(read, o);
    expect(o.answer).toBe(Array.from({ length: 300 }, (_, i) => `w${i} `).join(""));

    // Once it has ended, nothing runs: 204, which the transport reads as nothing to resume.
    const after = await fetch(`${baseURL}/api/ai-sdk/chat/${encodeURIComponent(chat)}/stream`, { headers });
    expect(after.status).toBe(204);
    expect(await transport.reconnectToStream({ chatId: chat })).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------
// The `agui` backend: a scripted AG-UI agent, in the browser.

const PATTERN = "Leuchtturm — 灯台";
const RESULT = "notes/lighthouse.md:3: Der Leuchtturm — 灯台 🗼";
const ANSWER = ["Found it: the **lighthouse** note ", "says 灯台 means lighthouse 🗼."];
const TODOS = [
  { id: "t1", title: "Find the lighthouse note", status: "completed" },
  { id: "t2", title: "Say what it means", status: "in_progress" },
];

/** What the scripted agent answers: reasoning, a tool call and its result, a task list, text. */
function lighthouse(input: RunAgentInput): AguiEvent[] {
  const { threadId, runId } = input;
  const args = JSON.stringify({ pattern: PATTERN, path: "notes/" });
  return [
    { type: EventType.RUN_STARTED, threadId, runId },
    { type: EventType.REASONING_START, messageId: "think-1" },
    { type: EventType.REASONING_MESSAGE_START, messageId: "think-1", role: "reasoning" },
    { type: EventType.REASONING_MESSAGE_CONTENT, messageId: "think-1", delta: "Looking for the lighthouse note… " },
    { type: EventType.REASONING_MESSAGE_CONTENT, messageId: "think-1", delta: "it should mention 灯台." },
    { type: EventType.REASONING_MESSAGE_END, messageId: "think-1" },
    { type: EventType.REASONING_END, messageId: "think-1" },
    { type: EventType.TOOL_CALL_START, toolCallId: "call-lh", toolCallName: "search_text" },
    // The arguments in pieces, one cut inside the pattern's string.
    { type: EventType.TOOL_CALL_ARGS, toolCallId: "call-lh", delta: args.slice(0, 14) },
    { type: EventType.TOOL_CALL_ARGS, toolCallId: "call-lh", delta: args.slice(14, 27) },
    { type: EventType.TOOL_CALL_ARGS, toolCallId: "call-lh", delta: args.slice(27) },
    { type: EventType.TOOL_CALL_END, toolCallId: "call-lh" },
    { type: EventType.TOOL_CALL_RESULT, messageId: "call-lh-result", toolCallId: "call-lh", content: RESULT, role: "tool" },
    { type: EventType.STATE_SNAPSHOT, snapshot: { todos: TODOS } },
    { type: EventType.TEXT_MESSAGE_START, messageId: "answer-1", role: "assistant" },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId: "answer-1", delta: ANSWER[0] },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId: "answer-1", delta: ANSWER[1] },
    { type: EventType.TEXT_MESSAGE_END, messageId: "answer-1" },
    { type: EventType.RUN_FINISHED, threadId, runId, outcome: { type: "success" } },
  ];
}

test("the scripted AG-UI agent's stream is valid AG-UI, as the official client reads it", async ({}, testInfo) => {
  test.skip(testInfo.project.name === "phone", API_ONLY);
  // The agent the browser test talks to is checked against the protocol's own client first,
  // so a failure there is Anchorage's, not the script's.
  const agent: AguiAgent = await aguiAgent(lighthouse, 1);
  try {
    const client = new HttpAgent({ url: agent.url, threadId: "thread-1" });
    client.messages = [USER("u1", "Where is the lighthouse note?")];
    const run = await runAgui(client, "run-1");
    expect(run.warnings).toEqual([]);
    expect(agent.accepts).toEqual(["text/event-stream"]);
    expect(run.messages.map((m) => m.role)).toEqual(["user", "reasoning", "assistant", "tool", "assistant"]);
    expect(run.messages[1]).toMatchObject({ content: "Looking for the lighthouse note… it should mention 灯台." });
    const view = aguiView(run.messages);
    expect(view.calls).toEqual([{ tid: "call-lh", name: "search_text", args: { pattern: PATTERN, path: "notes/" } }]);
    expect(view.results.get("call-lh")).toBe(RESULT);
    expect(view.texts).toEqual([ANSWER.join("")]);
    expect(client.state).toEqual({ todos: TODOS });
  } finally {
    agent.server.close();
  }
});

test("the agui backend streams a scripted AG-UI agent's turn into the page and settles it", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-agui-"));
  const agent = await aguiAgent(lighthouse);
  const server = startServer(port, dataDir, {}, ["--backend", "agui", "--agui-url", agent.url]);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`agui-${testInfo.project.name}-${name}.png`), fullPage: true });
  try {
    await waitHealthy(request, base);
    const session = (await (await request.post(`${base}/api/session/new`, { data: {} })).json()).session.id;
    await page.goto(`${base}/s/${session}`);
    await hydrated(page);
    await expect(page.locator("[data-agent]")).toHaveText(`AG-UI agent · ${new URL(agent.url).host}`);
    await send(page, "Where is the lighthouse note?");

    const turn = lastTurn(page);
    const answer = turn.locator("[data-final-answer='true']");
    await expect(answer).toHaveText("Found it: the lighthouse note says 灯台 means lighthouse 🗼.", { timeout: 20_000 });
    await expect(answer.locator("strong")).toHaveText("lighthouse");
    await expect(turn.locator(".assistant")).toHaveAttribute("data-state", "settled");
    await expect(turn.locator("[data-terminal-state]")).toHaveCount(0);
    // The agent's task list, from its state.
    const todos = page.locator("section.todos");
    await expect(todos.locator(".todos-head")).toHaveText("Todos · 1/2");
    await expect(todos.locator(".todo.completed .todo-text")).toHaveText("Find the lighthouse note");
    await expect(todos.locator(".todo.in_progress .todo-text")).toHaveText("Say what it means");
    await shot("answer");

    // The process in the Stream: the reasoning, and the tool with its arguments and result.
    await page.locator("[data-mode-switch] button", { hasText: "Stream" }).click();
    await expect(turn).toHaveAttribute("data-mode", "transparent_stream");
    await expect(turn.locator(".thinking")).toHaveCount(1);
    await expect(turn.locator(".thinking-preview")).toHaveText("Looking for the lighthouse note… it should mention 灯台.");
    const tool = turn.locator(".tool-card");
    await expect(tool).toHaveCount(1);
    await expect(tool).toHaveAttribute("data-tool-state", "done");
    await expect(tool.locator(".tool-head")).toHaveAttribute("title", "search_text");
    await expect(tool.locator(".tool-action")).toHaveText("Searched for");
    await expect(tool.locator(".tool-target")).toHaveText("notes/");
    await expect(tool.locator(".tool-status")).toHaveText("");
    await tool.locator(".tool-head").click();
    await expect(tool.locator(".tool-args")).toHaveText(JSON.stringify({ path: "notes/", pattern: PATTERN }, null, 2));
    await expect(tool.locator(".tool-output")).toHaveText(RESULT);
    // Nothing is left running.
    await expect(page.locator("[data-tool-state='running'], .assistant[data-state='running']")).toHaveCount(0);
    await shot("trace");

    // What the agent was asked: a RunAgentInput of our session and run, ending in the message.
    expect(agent.inputs).toHaveLength(1);
    const [input] = agent.inputs;
    expect(() => RunAgentInputSchema.parse(input)).not.toThrow();
    expect(input.threadId).toBe(session);
    expect(input.messages[input.messages.length - 1]).toMatchObject({ role: "user", content: "Where is the lighthouse note?" });
    expect(await turn.getAttribute("data-run-id")).toBe(input.runId);
    expect(agent.accepts).toEqual(["text/event-stream"]);

    // A reload rebuilds the same settled turn from the journal.
    await page.reload();
    await hydrated(page);
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("Found it: the lighthouse note says 灯台 means lighthouse 🗼.");
  } finally {
    await kill9(server);
    agent.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
