//! Parts of the page that a visit may never use (Settings, a row's menu, …), made in the
//! browser when first asked for. A release build (`cargo leptos --split` with the `split`
//! feature) puts their code in wasm files of their own, fetched on first use, so that the
//! first load carries only what the page needs to come alive; other builds keep them in the
//! bundle and make them at once.
//!
//! [`split_off!`] declares the function whose code is split off. It answers at once with what
//! the page then runs when it still wants it (a view to mount, a task, a listener to start):
//! fetching the code may take a while, and meanwhile the page may have moved on. A view goes
//! into an element that the page renders (the element is in the first load, what goes into it
//! is not); [`Mounted`] holds it until it goes.

use leptos::prelude::*;

/// A view mounted by split-off code. Dropping it takes the view out of the page and disposes
/// what it owned (its signals, effects and listeners).
pub(crate) struct Mounted(#[allow(dead_code)] Box<dyn std::any::Any>);

/// Mounts `view` at the end of `parent`, owned by `owner` (so that it sees the page's
/// context, as a child component would).
pub(crate) fn mount<V>(
    owner: &Owner,
    parent: &web_sys::Element,
    view: impl FnOnce() -> V + 'static,
) -> Mounted
where
    V: leptos::tachys::view::Render + 'static,
{
    owner.with(|| Mounted(Box::new(leptos::mount::mount_to_renderer(parent, view))))
}

/// Why a part could not be made: its file could not be fetched (offline, a new build
/// replaced the old one). The next call tries again.
pub(crate) type Unavailable = leptos::wasm_split::SplitLoaderError;

/// Declares `async fn $name(args) -> Result<$ret, Unavailable>` running `$body`: in a
/// release build from the split-off file `$module` (fetched by the first call), in other
/// builds from the bundle.
macro_rules! split_off {
    ($module:ident, fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        #[cfg(feature = "split")]
        #[leptos::wasm_split::wasm_split($module, wasm_split_path = ::leptos::wasm_split, fallible)]
        fn $name($($arg: $ty),*) -> Result<$ret, $crate::lazy::Unavailable> {
            Ok($body)
        }
        #[cfg(not(feature = "split"))]
        async fn $name($($arg: $ty),*) -> Result<$ret, $crate::lazy::Unavailable> {
            Ok($body)
        }
    };
}
pub(crate) use split_off;

/// Work made by split-off code, run by the page once it still wants it.
pub(crate) type Task<T = ()> = std::pin::Pin<Box<dyn std::future::Future<Output = T>>>;

/// A view ready to be mounted: made by split-off code, run once the page still wants it.
pub(crate) type Mounter = Box<dyn FnOnce() -> Mounted>;

/// Where a split-off part goes: holds it while shown, and knows whether the latest request
/// for it still stands (a part asked for, then closed before its file came, is not made).
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    held: StoredValue<Option<Mounted>, LocalStorage>,
    asked: StoredValue<u64, LocalStorage>,
}

impl Slot {
    pub(crate) fn new() -> Self {
        Self {
            held: StoredValue::new_local(None),
            asked: StoredValue::new_local(0),
        }
    }

    /// Shows what `make` gives (once its code is fetched, if need be), in place of what the
    /// slot held; `done` hears whether it came. A later [`Slot::show`] or [`Slot::clear`]
    /// before it arrives wins: the view is then never made.
    pub(crate) fn show(
        self,
        make: impl std::future::Future<Output = Result<Mounter, Unavailable>> + 'static,
        done: impl FnOnce(Result<(), Unavailable>) + 'static,
    ) {
        let ticket = self.asked.try_update_value(|n| {
            *n += 1;
            *n
        });
        leptos::task::spawn_local(async move {
            let made = make.await;
            if self.asked.try_get_value() != ticket {
                return;
            }
            match made {
                Ok(mount) => {
                    // The old view goes first: two would briefly share the element.
                    let _ = self.held.try_update_value(|held| *held = None);
                    let view = mount();
                    let _ = self.held.try_update_value(|held| *held = Some(view));
                    done(Ok(()));
                }
                Err(e) => done(Err(e)),
            }
        });
    }

    /// Takes the part out of the page (and forgets any request still on its way).
    pub(crate) fn clear(self) {
        let _ = self.asked.try_update_value(|n| *n += 1);
        let _ = self.held.try_update_value(|held| *held = None);
    }
}

/// What the page says when a part could not be fetched: `what` did not happen, and what to do.
pub(crate) fn unavailable_message(what: &str) -> String {
    format!("{what}: check the connection and try again.")
}

/// Says [`unavailable_message`] on the page's problem line.
pub(crate) fn unavailable(chat: crate::state::ChatState, what: &str) {
    chat.error.set(Some(crate::state::Problem {
        message: unavailable_message(what),
        network: true,
    }));
}

/// Runs the task that split-off code makes, once that code is here; when it cannot come, says
/// that `what` (e.g. "The conversation could not be renamed") on the page's problem line.
pub(crate) fn run(
    chat: crate::state::ChatState,
    what: &'static str,
    make: impl std::future::Future<Output = Result<Task, Unavailable>> + 'static,
) {
    leptos::task::spawn_local(async move {
        match make.await {
            Ok(task) => task.await,
            Err(_) => unavailable(chat, what),
        }
    });
}
