//! Running the model's tool calls against the account's workspace, and the tools it is offered.

use super::*;
use crate::runtime::approvals::Approval;
use crate::runtime::tools::names::{ASK_USER, LIST_FILES, READ_FILE, SEARCH_TEXT, WRITE_FILE};

/// Tool output shown in the tool row (the model gets all of it).
pub(super) const PREVIEW_LIMIT: usize = 4_000;

pub(super) fn preview(text: &str) -> String {
    if text.len() <= PREVIEW_LIMIT {
        return text.to_owned();
    }
    let mut end = PREVIEW_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} bytes in all)", &text[..end], text.len())
}

/// The tools offered to the model.
pub fn tool_schemas() -> Value {
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({"type": "function", "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        }})
    };
    let path = json!({"type": "string", "description": "Path relative to the workspace root"});
    json!([
        tool(
            LIST_FILES,
            "List the files and directories in a workspace directory.",
            json!({ "path": path }),
            &[]
        ),
        tool(
            READ_FILE,
            "Read a text file from the workspace.",
            json!({ "path": path }),
            &["path"]
        ),
        tool(
            SEARCH_TEXT,
            "Find lines containing a text (case-insensitive) in the workspace.",
            json!({"query": {"type": "string"}, "path": path}),
            &["query"]
        ),
        tool(
            WRITE_FILE,
            "Create or overwrite a text file in the workspace. The user must approve it.",
            json!({"path": path, "content": {"type": "string"}}),
            &["path", "content"]
        ),
        tool(
            ASK_USER,
            "Ask the user a question and wait for the answer.",
            json!({"question": {"type": "string"},
                   "choices": {"type": "array", "items": {"type": "string"}}}),
            &["question"]
        ),
    ])
}

impl OpenAiAgent {
    /// Runs one tool call with its `tool` / `tool_complete` events; returns what the model
    /// reads.
    pub(super) async fn call_tool(
        &self,
        call: &Call,
        workspace: &Workspace,
        io: &RunIo,
    ) -> Result<String, Stopped> {
        let parsed: Result<Value, String> = if call.arguments.trim().is_empty() {
            Ok(json!({}))
        } else {
            serde_json::from_str(&call.arguments)
                .map_err(|e| format!("The tool arguments were not valid JSON ({e})."))
        };
        let args = parsed
            .clone()
            .unwrap_or_else(|_| json!({ "raw": call.arguments }));
        io.emit(
            EventKind::Tool,
            json!({"event_type": "tool.started", "name": call.name, "args": args,
                   "tid": call.id, "preview": null}),
        )
        .await?;
        let started = std::time::Instant::now();
        let result = match parsed {
            Ok(args) => self.run_tool(&call.name, &args, workspace, io).await?,
            Err(e) => Err(e),
        };
        let (text, is_error) = match &result {
            Ok(text) => (text.clone(), false),
            Err(e) => (e.clone(), true),
        };
        io.emit(
            EventKind::ToolComplete,
            json!({"event_type": "tool.completed", "name": call.name, "args": args,
                   "tid": call.id, "preview": preview(&text), "is_error": is_error,
                   "duration": started.elapsed().as_secs_f64()}),
        )
        .await?;
        Ok(if is_error {
            format!("Error: {text}")
        } else {
            text
        })
    }

    pub(super) async fn run_tool(
        &self,
        name: &str,
        args: &Value,
        workspace: &Workspace,
        io: &RunIo,
    ) -> Result<Result<String, String>, Stopped> {
        let text = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
        let path = |default: &str| {
            args["path"]
                .as_str()
                .filter(|p| !p.trim().is_empty())
                .unwrap_or(default)
                .to_owned()
        };
        let ws = workspace.clone();
        let blocking = |f: Box<dyn FnOnce() -> Result<String, String> + Send>| async move {
            tokio::task::spawn_blocking(f)
                .await
                .unwrap_or_else(|e| Err(format!("The tool failed: {e}")))
        };
        Ok(match name {
            LIST_FILES => {
                let p = path(".");
                blocking(Box::new(move || ws.list_files(&p))).await
            }
            READ_FILE => {
                let p = path("");
                blocking(Box::new(move || ws.read_file(&p))).await
            }
            SEARCH_TEXT => {
                let (q, p) = (text("query"), path("."));
                blocking(Box::new(move || ws.search_text(&q, &p))).await
            }
            WRITE_FILE => {
                let (p, content) = (path(""), text("content"));
                if let Err(e) = ws.resolve(&p) {
                    return Ok(Err(e));
                }
                let approval = Approval::write(
                    WRITE_FILE,
                    &p,
                    &format!("Write {} bytes to {p} in the workspace", content.len()),
                );
                if io.permitted(&approval).await.is_none() {
                    let choice = io.ask_approval(&approval).await?;
                    if !choice.allows() {
                        return Ok(Err(format!("The user denied writing `{p}`.")));
                    }
                }
                let all = self.workspaces.clone();
                blocking(Box::new(move || all.write(&ws, &p, &content))).await
            }
            ASK_USER => {
                let question = text("question");
                let choices: Vec<String> = args["choices"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let choices: Vec<&str> = choices.iter().map(String::as_str).collect();
                let answer = io.ask_clarify(&question, &choices).await?;
                if answer.trim().is_empty() {
                    Ok("(The user gave no answer.)".to_owned())
                } else {
                    Ok(answer)
                }
            }
            other => Err(format!("There is no tool named `{other}`.")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_cut_on_a_character_boundary() {
        let long = "é".repeat(PREVIEW_LIMIT);
        let p = preview(&long);
        assert!(p.len() < PREVIEW_LIMIT + 40);
        assert!(p.ends_with("bytes in all)"));
        assert_eq!(preview("short"), "short");
    }

    #[test]
    fn every_tool_has_a_schema() {
        let names: Vec<String> = tool_schemas()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [LIST_FILES, READ_FILE, SEARCH_TEXT, WRITE_FILE, ASK_USER]
        );
    }
}
