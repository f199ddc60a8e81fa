//! The server's HTTP surface, over real TCP on 127.0.0.1.

mod helpers;
mod pages;
