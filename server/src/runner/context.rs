//! How much of the model's context a conversation's next turn would use: the history that
//! turn would be given ([`Runner::with_files`]), measured by the adapter's own estimate.

use super::*;

impl Runner {
    /// The context the next turn of `session` would use with a message of `draft_bytes`
    /// bytes. Nothing is read when who answers knows no window.
    pub async fn context_use(
        &self,
        session: &crate::store::Session,
        draft_bytes: usize,
    ) -> Result<app::api::ContextUse, StoreError> {
        let model = session.model.as_deref();
        let unknown = self.adapter.context_use(model, &[], draft_bytes);
        if unknown.window.is_none() {
            return Ok(unknown);
        }
        // The next turn follows the branch shown.
        let shown = self.store.branch(&session.id).await?;
        let history = match shown.last() {
            Some((run, _)) => self.store.history(&run.id).await?,
            None => Vec::new(),
        };
        let history = self.with_files(history).await;
        Ok(self.adapter.context_use(model, &history, draft_bytes))
    }
}
