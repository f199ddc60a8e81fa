use std::net::SocketAddr;

use leptos::prelude::LeptosOptions;
use server::AppState;
use tempfile::TempDir;
use tokio::sync::oneshot;

/// A server on an ephemeral port, serving a site root of its own; stops when dropped.
pub struct TestApp {
    pub addr: SocketAddr,
    pub site: TempDir,
    stop: Option<oneshot::Sender<()>>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn spawn_app() -> TestApp {
    let site = tempfile::tempdir().expect("a temporary site root");
    std::fs::create_dir_all(site.path().join("pkg")).unwrap();
    std::fs::write(site.path().join("pkg/anchorage.css"), "body{color:red}").unwrap();
    let leptos_options = LeptosOptions::builder()
        .output_name("anchorage")
        .site_root(site.path().to_string_lossy().into_owned())
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server::serve(
        listener,
        AppState { leptos_options },
        async {
            let _ = stopped.await;
        },
    ));
    TestApp {
        addr,
        site,
        stop: Some(stop),
    }
}
