//! Resources and resource templates: the metadata the client lists and the
//! handlers that produce contents when a URI is read.

use crate::bindings::exports::wasm_mcp::plugin::resources::{Resource as ResourceDef, ResourceTemplate as TemplateDef};
use crate::completion::Completers;
use crate::uri_template::UriTemplate;
use crate::{Annotations, Arguments, Error, ResourceContents, builder};

type ReadFn = Box<dyn Fn(&str) -> Result<Vec<ResourceContents>, Error>>;
type TemplateReadFn = Box<dyn Fn(&str, &Arguments) -> Result<Vec<ResourceContents>, Error>>;

/// A resource at a fixed URI. Add it with
/// [`Plugin::resource`](crate::Plugin::resource).
pub struct Resource {
    pub(crate) def: ResourceDef,
    pub(crate) read: ReadFn,
}

impl Resource {
    /// A resource whose contents `read` produces each time it is read; it
    /// receives the URI.
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        read: impl Fn(&str) -> Result<Vec<ResourceContents>, Error> + 'static,
    ) -> Self {
        Resource {
            def: ResourceDef {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                annotations: None,
                icons: Vec::new(),
                meta: None,
            },
            read: Box::new(read),
        }
    }

    /// A resource with fixed text contents (its MIME type and size are listed).
    pub fn text(uri: impl Into<String>, name: impl Into<String>, mime_type: &str, text: impl Into<String>) -> Self {
        let text = text.into();
        let size = text.len();
        Self::fixed(uri, name, mime_type, size, move |uri, mime| {
            ResourceContents::text(uri, mime, &text)
        })
    }

    /// A resource with fixed binary contents (its MIME type and size are listed).
    pub fn blob(uri: impl Into<String>, name: impl Into<String>, mime_type: &str, data: impl Into<Vec<u8>>) -> Self {
        let data = data.into();
        let size = data.len();
        Self::fixed(uri, name, mime_type, size, move |uri, mime| {
            ResourceContents::blob(uri, mime, data.clone())
        })
    }

    /// A resource of `size` bytes whose one item of contents `contents` makes
    /// from the URI and the MIME type.
    fn fixed(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: &str,
        size: usize,
        contents: impl Fn(&str, &str) -> ResourceContents + 'static,
    ) -> Self {
        let mime = mime_type.to_string();
        Self::new(uri, name, move |uri| Ok(vec![contents(uri, &mime)]))
            .mime_type(mime_type)
            .size(size as u64)
    }

    builder::setters! {
        /// A human-readable name for display.
        text title;
        /// What the resource holds.
        text description;
        /// The MIME type of its contents.
        text mime_type;
        /// Its size in bytes, if known.
        value size: u64;
        /// Sets the annotations (audience, priority, last modified).
        value annotations: Annotations;
        /// Adds an icon.
        icon;
        /// Sets the resource's `_meta` object.
        meta;
    }
}

/// A family of resources whose URIs fit an RFC 6570 template such as
/// `notes://note/{slug}`. Add it with
/// [`Plugin::resource_template`](crate::Plugin::resource_template).
pub struct ResourceTemplate {
    pub(crate) def: TemplateDef,
    pub(crate) pattern: UriTemplate,
    pub(crate) read: TemplateReadFn,
    pub(crate) completers: Completers,
}

impl ResourceTemplate {
    /// A template whose reads `read` serves. The SDK routes a read to the
    /// first template that matches the URI; `read` receives the URI and the
    /// values of its `{var}` expressions (not percent-decoded; a value never
    /// contains `/`). Templates with other kinds of expressions are listed
    /// but never matched.
    pub fn new(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        read: impl Fn(&str, &Arguments) -> Result<Vec<ResourceContents>, Error> + 'static,
    ) -> Self {
        let uri_template = uri_template.into();
        ResourceTemplate {
            pattern: UriTemplate::parse(&uri_template),
            def: TemplateDef {
                uri_template,
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                annotations: None,
                icons: Vec::new(),
                meta: None,
            },
            read: Box::new(read),
            completers: Completers::default(),
        }
    }

    builder::setters! {
        /// A human-readable name for display.
        text title;
        /// What the resources hold.
        text description;
        /// The MIME type of every resource that fits.
        text mime_type;
        /// Sets the annotations (audience, priority, last modified).
        value annotations: Annotations;
        /// Adds an icon.
        icon;
        /// Sets the template's `_meta` object.
        meta;
        /// Suggests values for the template variable `variable`: `handler`
        /// receives the value typed so far and the values the client already
        /// resolved for other variables, and returns the suggestions (the SDK
        /// passes on the first 100 and reports the total).
        complete variable;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContentsBody;

    #[test]
    fn fixed_resources_list_their_mime_type_and_size_and_read_the_same_contents() {
        let text = Resource::text("t://text", "text", "text/plain", "héllo").title("Text");
        let def = &text.def;
        assert_eq!(
            (def.mime_type.as_deref(), def.size, def.title.as_deref()),
            (Some("text/plain"), Some(6), Some("Text"))
        );
        let contents = (text.read)("t://text").unwrap();
        assert_eq!((contents.len(), contents[0].uri.as_str()), (1, "t://text"));
        assert_eq!(contents[0].mime_type.as_deref(), Some("text/plain"));
        assert!(matches!(&contents[0].body, ContentsBody::Text(t) if t == "héllo"));

        let blob = Resource::blob("t://blob", "blob", "image/png", [1u8, 2, 3]);
        assert_eq!(
            (blob.def.mime_type.as_deref(), blob.def.size),
            (Some("image/png"), Some(3))
        );
        for _ in 0..2 {
            let contents = (blob.read)("t://blob").unwrap();
            assert!(matches!(&contents[0].body, ContentsBody::Blob(b) if b == &[1, 2, 3]));
        }
    }
}
