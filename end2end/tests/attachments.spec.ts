import { test, expect } from "./fixtures";
import { mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { deflateSync } from "zlib";
import { freePort, kill9, openAiEnv, startServer, waitHealthy } from "./own_server";
import { provider } from "./provider";
import { hydrated, lastTurn, openNewSession } from "./support";

// Attachments as a person uses them: the paperclip picks files, a drop or a paste attaches
// them too; each shows as a chip while it uploads and once it is kept (or says why not);
// the sent message shows them (the picture itself), a reload keeps them, and the agent gets
// them (the demo names them; the openai backend sends the picture as an image part).

/** A PNG of `size`×`size` red pixels, made here (chunks with their CRC, the pixels deflated). */
function redPng(size: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array(size).fill([200, 30, 30]).flat())]);
  const pixels = deflateSync(Buffer.concat(Array(size).fill(row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", pixels),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

const PNG = redPng(2);
const NOTES = "first line\nsecond line\n";

test("picked files show as chips, go with the message, survive a reload and are named by the agent", async ({ page, request }, testInfo) => {
  await openNewSession(page, request);
  const composer = page.locator("form.composer");
  const attach = page.getByRole("button", { name: "Attach files" });
  await expect(attach).toBeVisible();
  await expect(attach).toBeInViewport();

  // The paperclip opens the file picker; two files are picked.
  const chooser = page.waitForEvent("filechooser");
  await attach.click();
  await (await chooser).setFiles([
    { name: "red square.png", mimeType: "image/png", buffer: PNG },
    { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from(NOTES) },
  ]);
  const chips = composer.getByRole("list", { name: "Attached files" }).getByRole("listitem");
  await expect(chips).toHaveCount(2);
  await expect(chips.nth(0)).toContainText("red square.png");
  await expect(chips.nth(0)).toContainText(`${PNG.length} B`);
  await expect(chips.nth(1)).toContainText("notes.txt");
  await expect(chips.nth(1)).toContainText(`${NOTES.length} B`);
  // Once kept, the picture is shown small on its chip.
  const thumb = chips.nth(0).locator("img");
  await expect(thumb).toBeVisible();
  await expect.poll(() => thumb.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(2);

  // A file of a type not taken says why on its chip, and can be taken off.
  const refused = page.waitForEvent("filechooser");
  await attach.click();
  await (await refused).setFiles([{ name: "paper.pdf", mimeType: "application/pdf", buffer: Buffer.from("%PDF-1.7\n\xe2\xe3\xcf\xd3\x00binary") }]);
  await expect(chips).toHaveCount(3);
  await expect(chips.nth(2)).toContainText("Only images (PNG, JPEG, GIF, WebP) and text files");
  await page.screenshot({ path: testInfo.outputPath("composer-chips.png") });
  await chips.nth(2).getByRole("button", { name: "Remove paper.pdf" }).click();
  await expect(chips).toHaveCount(2);

  // Sent with a question: the chips leave the composer and appear on the message.
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("What are these?");
  await page.getByRole("button", { name: "Send" }).click();
  await expect(chips).toHaveCount(0);
  const turn = lastTurn(page);
  const sent = page.locator(".user-message").last();
  const picture = sent.getByRole("img", { name: "red square.png" });
  await expect(picture).toBeVisible();
  await expect(sent.getByRole("link", { name: /notes\.txt/ })).toBeVisible();
  await expect(sent.locator(".bubble")).toHaveText("What are these?");
  const answer = turn.locator("[data-final-answer='true']");
  await expect(answer).toContainText("I received 2 files", { timeout: 20_000 });
  await expect(answer).toContainText("red square.png");
  await expect(answer).toContainText(`PNG image, ${PNG.length} B`);
  await expect(answer).toContainText("text, 2 lines");
  await expect.poll(() => picture.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(2);
  const before = await picture.boundingBox();
  await page.screenshot({ path: testInfo.outputPath("sent.png") });

  // A reload shows the same message with the same files, the picture in the same place.
  await page.reload();
  await hydrated(page);
  const again = page.locator(".user-message").last();
  const reloaded = again.getByRole("img", { name: "red square.png" });
  await expect(reloaded).toBeVisible();
  await expect.poll(() => reloaded.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(2);
  const after = await reloaded.boundingBox();
  expect(after!.width).toBe(before!.width);
  expect(after!.height).toBe(before!.height);
  // The text file opens as what it is.
  const href = await again.getByRole("link", { name: /notes\.txt/ }).getAttribute("href");
  const served = await request.get(href!);
  expect(served.headers()["content-type"]).toBe("text/plain; charset=utf-8");
  expect(await served.text()).toBe(NOTES);
});

test("files dropped on the conversation or pasted into the message box are attached, and a message of files alone is sent", async ({ page, request }, testInfo) => {
  await openNewSession(page, request);
  const composer = page.locator("form.composer");
  const chips = composer.getByRole("list", { name: "Attached files" }).getByRole("listitem");

  // Dropped anywhere on the conversation: the composer shows it takes files while they are
  // dragged over the page, moving across the elements inside does not end that, and the drop
  // attaches them.
  await page.evaluate((notes) => {
    const data = new DataTransfer();
    data.items.add(new File([notes], "dropped.txt", { type: "text/plain" }));
    (window as any).__dropped = data;
    const fire = (el: Element, type: string) =>
      el.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
    const transcript = document.querySelector(".transcript")!;
    const heading = document.querySelector(".chat-title")!;
    fire(transcript, "dragenter");
    fire(heading, "dragenter");
    fire(transcript, "dragleave");
    fire(heading, "dragover");
  }, NOTES);
  await expect(composer).toHaveClass(/dragging/);
  await page.evaluate(() => {
    const data = (window as any).__dropped;
    document
      .querySelector(".chat-title")!
      .dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
  });
  await expect(composer).not.toHaveClass(/dragging/);
  await expect(chips).toHaveCount(1);
  await expect(chips.nth(0)).toContainText("dropped.txt");
  await expect(chips.nth(0)).toContainText(`${NOTES.length} B`);

  // Pasted (a screenshot from the clipboard): attached, not typed.
  const input = page.getByRole("textbox", { name: "Message" });
  await input.focus();
  await page.evaluate((bytes) => {
    const data = new DataTransfer();
    data.items.add(new File([new Uint8Array(bytes)], "pasted.png", { type: "image/png" }));
    document.querySelector("#composer-input")!.dispatchEvent(
      new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }),
    );
  }, [...PNG]);
  await expect(chips).toHaveCount(2);
  await expect(chips.nth(1).locator("img")).toBeVisible();
  await expect(input).toHaveValue("");
  await page.screenshot({ path: testInfo.outputPath("dropped-and-pasted.png") });

  // No text: the files alone are a message.
  const sendButton = page.getByRole("button", { name: "Send" });
  await expect(sendButton).toBeEnabled();
  await sendButton.click();
  const sent = page.locator(".user-message").last();
  await expect(sent.getByRole("img", { name: "pasted.png" })).toBeVisible();
  await expect(sent.getByRole("link", { name: /dropped\.txt/ })).toBeVisible();
  await expect(sent.locator(".bubble")).toHaveCount(0);
  await expect(lastTurn(page).locator("[data-final-answer='true']")).toContainText("dropped.txt", { timeout: 20_000 });
  // The conversation is named after its first file.
  await expect(page.locator(".chat-title")).toHaveText("dropped.txt");
});

test("with the openai backend, an attached picture reaches the model as an image part", async ({ page, request }, testInfo) => {
  test.setTimeout(90_000);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "anchorage-files-"));
  const upstream = await provider(["scripted"], () => "A small red square.");
  const server = startServer(port, dataDir, openAiEnv(upstream.url, dataDir));
  try {
    await waitHealthy(request, base);
    await page.goto(`${base}/new`);
    await hydrated(page);
    const chooser = page.waitForEvent("filechooser");
    await page.getByRole("button", { name: "Attach files" }).click();
    await (await chooser).setFiles([{ name: "square.png", mimeType: "image/png", buffer: PNG }]);
    const chip = page.locator("form.composer").getByRole("listitem");
    await expect(chip.locator("img")).toBeVisible();
    await page.getByRole("textbox", { name: "Message" }).fill("What is this?");
    await page.getByRole("button", { name: "Send" }).click();
    await expect(lastTurn(page).locator("[data-final-answer='true']")).toHaveText("A small red square.", { timeout: 20_000 });
    expect(upstream.completions).toHaveLength(1);
    const user = upstream.completions[0].messages.at(-1);
    expect(user.role).toBe("user");
    const image = user.content.find((p: any) => p.type === "image_url");
    expect(image.image_url.url).toBe(`data:image/png;base64,${PNG.toString("base64")}`);
    expect(user.content[0].text).toContain("What is this?");
    expect(user.content[0].text).toContain(`square.png (${PNG.length} B): an image`);
  } finally {
    await kill9(server);
    upstream.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
