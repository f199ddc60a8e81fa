//! The server's HTTP surface, over real TCP on 127.0.0.1.

mod accounts;
mod attachments;
mod backends;
mod base_path;
mod boundary;
mod branches;
mod chat;
mod context;
mod errors;
mod grants;
mod hardening;
mod helpers;
mod instances;
mod limits;
mod models;
mod pages;
mod passkeys;
mod places;
mod protocols;
mod real_model;
mod restart;
mod security;
mod sessions;
mod shares;
mod streaming;
mod upstream;
