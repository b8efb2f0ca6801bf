"""The file store (scoped FileItems and folders), the chat-document file bridge and the
tolerant document-reference parser."""
