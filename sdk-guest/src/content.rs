//! Constructors for the content a plugin returns: content blocks (text, image,
//! audio, resource links, embedded resources), resource contents and icons.
//! The types themselves are the WIT records, re-exported at the crate root.

use serde_json::Value;

use crate::{
    Annotations, ContentBlock, ContentsBody, EmbeddedResource, Icon, MediaContent, ResourceContents, ResourceLink,
    TextContent,
};

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            annotations: None,
            meta: None,
        })
    }

    /// An image from its raw bytes (the host base64-encodes them).
    pub fn image(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(media(data.into(), mime_type.into()))
    }

    /// An audio clip from its raw bytes (the host base64-encodes them).
    pub fn audio(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(media(data.into(), mime_type.into()))
    }

    /// A link to a resource the client may read.
    pub fn resource_link(link: ResourceLink) -> Self {
        ContentBlock::ResourceLink(link)
    }

    /// A resource embedded with its contents.
    pub fn resource(contents: ResourceContents) -> Self {
        ContentBlock::EmbeddedResource(EmbeddedResource {
            resource: contents,
            annotations: None,
            meta: None,
        })
    }

    /// Sets the block's annotations (audience, priority, last modified).
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        *self.annotations_mut() = Some(annotations);
        self
    }

    /// Sets the block's `_meta` object.
    pub fn with_meta(mut self, meta: Value) -> Self {
        *self.meta_mut() = Some(meta.to_string());
        self
    }

    fn annotations_mut(&mut self) -> &mut Option<Annotations> {
        match self {
            ContentBlock::Text(c) => &mut c.annotations,
            ContentBlock::Image(c) | ContentBlock::Audio(c) => &mut c.annotations,
            ContentBlock::ResourceLink(c) => &mut c.annotations,
            ContentBlock::EmbeddedResource(c) => &mut c.annotations,
        }
    }

    fn meta_mut(&mut self) -> &mut Option<String> {
        match self {
            ContentBlock::Text(c) => &mut c.meta,
            ContentBlock::Image(c) | ContentBlock::Audio(c) => &mut c.meta,
            ContentBlock::ResourceLink(c) => &mut c.meta,
            ContentBlock::EmbeddedResource(c) => &mut c.meta,
        }
    }
}

fn media(data: Vec<u8>, mime_type: String) -> MediaContent {
    MediaContent {
        data,
        mime_type,
        annotations: None,
        meta: None,
    }
}

impl ResourceContents {
    /// Text contents of the resource at `uri`.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ContentsBody::Text(text.into()),
            meta: None,
        }
    }

    /// Binary contents of the resource at `uri` (the host base64-encodes them).
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ContentsBody::Blob(data.into()),
            meta: None,
        }
    }
}

impl ResourceLink {
    /// A link to `uri` named `name`; set the other fields with struct update
    /// syntax: `ResourceLink { mime_type: Some(..), ..ResourceLink::new(uri, name) }`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: Vec::new(),
            annotations: None,
            meta: None,
        }
    }
}

impl Icon {
    /// An icon at `src` (an `https:` or `data:` URI); set `mime_type`, `sizes`
    /// and `theme` with struct update syntax.
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: None,
            theme: None,
        }
    }
}
