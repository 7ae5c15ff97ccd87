//! Resources and resource templates: the metadata the client lists and the
//! handlers that produce contents when a URI is read.

use serde_json::Value;

use crate::bindings::exports::wasm_mcp::plugin::resources::{Resource as ResourceDef, ResourceTemplate as TemplateDef};
use crate::completion::Completers;
use crate::uri_template::UriTemplate;
use crate::{Annotations, Arguments, Error, Icon, ResourceContents};

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
        let (mime, text) = (mime_type.to_string(), text.into());
        let size = text.len() as u64;
        Self::new(uri, name, move |uri| {
            Ok(vec![ResourceContents::text(uri, &mime, &text)])
        })
        .mime_type(mime_type)
        .size(size)
    }

    /// A resource with fixed binary contents (its MIME type and size are listed).
    pub fn blob(uri: impl Into<String>, name: impl Into<String>, mime_type: &str, data: impl Into<Vec<u8>>) -> Self {
        let (mime, data) = (mime_type.to_string(), data.into());
        let size = data.len() as u64;
        Self::new(uri, name, move |uri| {
            Ok(vec![ResourceContents::blob(uri, &mime, data.clone())])
        })
        .mime_type(mime_type)
        .size(size)
    }

    /// A human-readable name for display.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    /// What the resource holds.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    /// The MIME type of its contents.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.def.mime_type = Some(mime_type.into());
        self
    }

    /// Its size in bytes, if known.
    pub fn size(mut self, size: u64) -> Self {
        self.def.size = Some(size);
        self
    }

    /// Sets the annotations (audience, priority, last modified).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.def.annotations = Some(annotations);
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def.icons.push(icon);
        self
    }

    /// Sets the resource's `_meta` object.
    pub fn meta(mut self, meta: Value) -> Self {
        self.def.meta = Some(meta.to_string());
        self
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

    /// A human-readable name for display.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    /// What the resources hold.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    /// The MIME type of every resource that fits.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.def.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the annotations (audience, priority, last modified).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.def.annotations = Some(annotations);
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def.icons.push(icon);
        self
    }

    /// Sets the template's `_meta` object.
    pub fn meta(mut self, meta: Value) -> Self {
        self.def.meta = Some(meta.to_string());
        self
    }

    /// Suggests values for the template variable `variable`: `handler`
    /// receives the value typed so far and the values the client already
    /// resolved for other variables, and returns the suggestions (the SDK
    /// passes on the first 100 and reports the total).
    pub fn complete(
        mut self,
        variable: impl Into<String>,
        handler: impl Fn(&str, &Arguments) -> Vec<String> + 'static,
    ) -> Self {
        self.completers.add(variable.into(), Box::new(handler));
        self
    }
}
