//! What this browser keeps for the person: its local storage, and the preference cookies
//! (view, theme, time zone) the server renders their pages by.

/// This browser's local storage, when it has one.
pub(crate) fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Tells the server, through a cookie, which display mode to render this browser's pages in.
pub(crate) fn remember_mode(mode: anchor::Mode) {
    set_preference(crate::api::MODE_COOKIE, Some(mode.as_str()));
}

/// Sets one of this browser's preference cookies for the site (`None` removes it): the
/// server renders pages by them.
pub(crate) fn set_preference(name: &str, value: Option<&str>) {
    use wasm_bindgen::JsCast as _;
    let Some(document) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.dyn_into::<web_sys::HtmlDocument>().ok())
    else {
        return;
    };
    let path = crate::base::cookie_path();
    let cookie = match value {
        Some(value) => format!("{name}={value}; Path={path}; Max-Age=31536000; SameSite=Lax"),
        None => format!("{name}=; Path={path}; Max-Age=0; SameSite=Lax"),
    };
    let _ = document.set_cookie(&cookie);
}

/// Shows the colour theme `theme` now (on `<html data-theme>`) and tells the server, through
/// a cookie, to render this browser's pages in it.
pub(crate) fn apply_theme(theme: crate::api::Theme) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if let Some(root) = document.document_element() {
        let _ = match theme {
            crate::api::Theme::System => root.remove_attribute("data-theme"),
            chosen => root.set_attribute("data-theme", chosen.as_str()),
        };
    }
    let value = (theme != crate::api::Theme::System).then(|| theme.as_str());
    set_preference(crate::api::THEME_COOKIE, value);
}
