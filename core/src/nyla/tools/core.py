"""The ``core`` toolbox: workspace files and folders (seeds: Kern-Tools, workspace part).

Every tool goes through the run's files (``ctx.services.files``) with the run's context, so every read and write is
checked against the caller's scope. ``writeFile`` in ``create`` mode binds the new file to the
run's workflow (file bridge) and reports both ``docItem:<id>`` and the file id.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from nyla.hookspecs import hookimpl
from nyla.models.files import FileItem
from nyla.models.tool_services import ToolFiles
from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult
from nyla.tools._args import Args, ToolSpec, guarded, tools_from

#: Characters of a file ``readFile`` returns at most in one call.
READ_LIMIT = 50_000


def _store(ctx: ToolContext) -> ToolFiles:
    return ctx.services.files


def _line(item: FileItem) -> str:
    tags = f" tags={','.join(item.tags)}" if item.tags else ""
    folder = f" folder={item.folder_id}" if item.folder_id else ""
    return f"- {item.name} (id {item.id}, {item.size} bytes, {item.mime_type}{folder}{tags})"


def _brief(item: FileItem) -> dict[str, Any]:
    return {"fileId": item.id, "name": item.name, "size": item.size, "folderId": item.folder_id}


# ---- files -------------------------------------------------------------------------------


class ReadFileArgs(Args):
    file_id: str = Field(description="Id of the file.")
    start_line: int | None = Field(None, ge=1, description="First line to read (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to read (inclusive).")


@guarded
async def read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
    raw = await _store(ctx).read_bytes(args.file_id, ctx.run)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ToolResult.ok(
            f"file {args.file_id} is binary ({len(raw)} bytes); it cannot be read as text",
            data={"fileId": args.file_id, "binary": True, "size": len(raw)},
        )
    if args.start_line or args.end_line:
        lines = text.splitlines()
        start = (args.start_line or 1) - 1
        end = args.end_line or len(lines)
        if start >= len(lines):
            return ToolResult.fail(
                f"the file has {len(lines)} lines; startLine {start + 1} is past the end",
                "INVALID_VALUE",
                field="startLine",
                suggestion=f"use a startLine between 1 and {len(lines)}",
            )
        body = "\n".join(lines[start:end])
        return ToolResult.ok(f"[lines {start + 1}-{min(end, len(lines))} of {len(lines)}]\n{body}")
    if len(text) > READ_LIMIT:
        return ToolResult.ok(
            text[:READ_LIMIT] + f"\n[... truncated: {len(text) - READ_LIMIT} more characters; "
            "use startLine/endLine to read the rest]"
        )
    return ToolResult.ok(text)


class ListFilesArgs(Args):
    folder_id: str | None = Field(None, description="Only files in this folder.")
    tags: list[str] | None = Field(None, description="Only files carrying all these tags.")
    search: str | None = Field(None, description="Only files whose name contains this text.")


@guarded
async def list_files(args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
    items = await _store(ctx).list(
        ctx.run, folder_id=args.folder_id, tags=args.tags, search=args.search
    )
    if not items:
        return ToolResult.ok("no files match", data=[])
    return ToolResult.ok(
        f"{len(items)} files:\n" + "\n".join(_line(i) for i in items),
        data=[_brief(i) for i in items],
    )


class SearchInFileContentArgs(Args):
    query: str = Field(min_length=1, description="Text to find (case-insensitive).")
    folder_id: str | None = Field(None, description="Only files in this folder.")
    file_ids: list[str] | None = Field(None, description="Only these files.")


@guarded
async def search_in_file_content(args: SearchInFileContentArgs, ctx: ToolContext) -> ToolResult:
    hits = await _store(ctx).search_content(
        ctx.run, args.query, folder_id=args.folder_id, file_ids=args.file_ids
    )
    if not hits:
        return ToolResult.ok(f"no line contains {args.query!r}", data=[])
    lines = [f"{h.name} (id {h.file_id}) line {h.line}: {h.text[:300]}" for h in hits]
    data = [h.to_wire() for h in hits]
    return ToolResult.ok(f"{len(hits)} matching lines:\n" + "\n".join(lines), data=data)


class WriteFileArgs(Args):
    content: str = Field(description="Text to write.")
    mode: Literal["create", "append", "overwrite"] = Field(
        "create", description="create a new file, or append to / overwrite fileId."
    )
    name: str | None = Field(None, description="Name of the new file (mode create).")
    file_id: str | None = Field(None, description="File to append to or overwrite.")
    folder_id: str | None = Field(None, description="Folder of the new file (mode create).")
    tags: list[str] | None = Field(None, description="Tags of the new file (mode create).")


@guarded
async def write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
    store = _store(ctx)
    if args.mode == "create":
        if not args.name:
            return ToolResult.fail(
                "mode create needs a name", "MISSING_FIELD", field="name", suggestion="add name"
            )
        item = await store.save(
            args.name,
            args.content.encode(),
            ctx.run,
            folder_id=args.folder_id,
            tags=args.tags,
        )
        from nyla.files.bridge import attach_to_run, format_tool_file_result

        doc_id = await attach_to_run(ctx, item, f"writeFile:{item.name}")
        return ToolResult.ok(
            format_tool_file_result("Created", item, doc_id),
            data={**_brief(item), "docItem": f"docItem:{doc_id}" if doc_id else None},
        )
    if not args.file_id:
        return ToolResult.fail(f"mode {args.mode} needs fileId", "MISSING_FIELD", field="fileId")
    item = await store.write(args.file_id, args.content.encode(), ctx.run, mode=args.mode)
    verb = "Appended to" if args.mode == "append" else "Overwrote"
    return ToolResult.ok(f"{verb} '{item.name}' (now {item.size} bytes)", data=_brief(item))


class FileIdArgs(Args):
    file_id: str = Field(description="Id of the file.")


@guarded
async def delete_file(args: FileIdArgs, ctx: ToolContext) -> ToolResult:
    if not await _store(ctx).delete(args.file_id, ctx.run):
        return ToolResult.fail(f"file {args.file_id!r} not found", "NOT_FOUND", field="fileId")
    return ToolResult.ok(f"deleted file {args.file_id}", data={"fileId": args.file_id})


class RenameFileArgs(Args):
    file_id: str = Field(description="Id of the file.")
    new_name: str = Field(min_length=1, description="The new name.")


@guarded
async def rename_file(args: RenameFileArgs, ctx: ToolContext) -> ToolResult:
    item = await _store(ctx).update(args.file_id, ctx.run, name=args.new_name)
    return ToolResult.ok(f"renamed to '{item.name}'", data=_brief(item))


class MoveFileArgs(Args):
    file_id: str = Field(description="Id of the file.")
    folder_id: str | None = Field(description="Target folder id; null for the root.")


@guarded
async def move_file(args: MoveFileArgs, ctx: ToolContext) -> ToolResult:
    item = await _store(ctx).update(args.file_id, ctx.run, folder_id=args.folder_id)
    return ToolResult.ok(
        f"moved '{item.name}' to {args.folder_id or 'the root'}", data=_brief(item)
    )


class TagFileArgs(Args):
    file_id: str = Field(description="Id of the file.")
    tags: list[str] = Field(description="Tags to set, add or remove.")
    mode: Literal["set", "add", "remove"] = Field("set", description="How to apply the tags.")


@guarded
async def tag_file(args: TagFileArgs, ctx: ToolContext) -> ToolResult:
    store = _store(ctx)
    current = await store.get(args.file_id, ctx.run)
    if current is None:
        return ToolResult.fail(f"file {args.file_id!r} not found", "NOT_FOUND", field="fileId")
    if args.mode == "add":
        tags = set(current.tags) | set(args.tags)
    elif args.mode == "remove":
        tags = set(current.tags) - set(args.tags)
    else:
        tags = set(args.tags)
    item = await store.update(args.file_id, ctx.run, tags=tags)
    return ToolResult.ok(
        f"tags of '{item.name}': {', '.join(item.tags) or 'none'}", data=_brief(item)
    )


class CopyFileArgs(Args):
    file_id: str = Field(description="Id of the file to copy.")
    new_name: str | None = Field(None, description="Name of the copy.")
    folder_id: str | None = Field(None, description="Folder of the copy (default: the same).")


@guarded
async def copy_file(args: CopyFileArgs, ctx: ToolContext) -> ToolResult:
    folder: Any = args.folder_id if "folder_id" in args.model_fields_set else "keep"
    item = await _store(ctx).copy(args.file_id, ctx.run, name=args.new_name, folder_id=folder)
    return ToolResult.ok(f"copied to '{item.name}' (file id: {item.id})", data=_brief(item))


class ReplaceInFileArgs(Args):
    file_id: str = Field(description="Id of the file.")
    old_text: str = Field(min_length=1, description="Exact text to replace.")
    new_text: str = Field(description="Replacement text.")
    count: int | None = Field(None, ge=1, description="Replace at most this many occurrences.")


@guarded
async def replace_in_file(args: ReplaceInFileArgs, ctx: ToolContext) -> ToolResult:
    item, n = await _store(ctx).replace(
        args.file_id, args.old_text, args.new_text, ctx.run, count=args.count
    )
    if n == 0:
        return ToolResult.fail(
            f"'{args.old_text[:80]}' does not occur in '{item.name}'",
            "NO_MATCH",
            field="oldText",
            suggestion="read the file and copy the exact text",
        )
    return ToolResult.ok(
        f"replaced {n} occurrence(s) in '{item.name}'", data={**_brief(item), "replacements": n}
    )


# ---- folders -----------------------------------------------------------------------------


class ListFoldersArgs(Args):
    parent_id: str | None = Field(None, description="List the folders in this folder (root: null).")
    recursive: bool = Field(False, description="List every folder at any depth.")


@guarded
async def list_folders(args: ListFoldersArgs, ctx: ToolContext) -> ToolResult:
    folders = await _store(ctx).list_folders(ctx.run, args.parent_id, all_levels=args.recursive)
    if not folders:
        return ToolResult.ok("no folders", data=[])
    lines = [f"- {f.name} (id {f.id}, parent {f.parent_id or 'root'})" for f in folders]
    data = [f.to_wire() for f in folders]
    return ToolResult.ok(f"{len(folders)} folders:\n" + "\n".join(lines), data=data)


class CreateFolderArgs(Args):
    name: str = Field(min_length=1, description="Folder name.")
    parent_id: str | None = Field(None, description="Parent folder (root: null).")


@guarded
async def create_folder(args: CreateFolderArgs, ctx: ToolContext) -> ToolResult:
    folder = await _store(ctx).create_folder(args.name, ctx.run, parent_id=args.parent_id)
    return ToolResult.ok(f"created folder '{folder.name}' (id {folder.id})", data=folder.to_wire())


class DeleteFolderArgs(Args):
    folder_id: str = Field(description="Id of the folder.")
    recursive: bool = Field(False, description="Also delete everything inside it.")


@guarded
async def delete_folder(args: DeleteFolderArgs, ctx: ToolContext) -> ToolResult:
    counts = await _store(ctx).delete_folder(args.folder_id, ctx.run, recursive=args.recursive)
    return ToolResult.ok(
        f"deleted {counts.folders} folder(s) and {counts.files} file(s)", data=counts.to_wire()
    )


class RenameFolderArgs(Args):
    folder_id: str = Field(description="Id of the folder.")
    new_name: str = Field(min_length=1, description="The new name.")


@guarded
async def rename_folder(args: RenameFolderArgs, ctx: ToolContext) -> ToolResult:
    folder = await _store(ctx).rename_folder(args.folder_id, args.new_name, ctx.run)
    return ToolResult.ok(f"renamed folder to '{folder.name}'", data=folder.to_wire())


class MoveFolderArgs(Args):
    folder_id: str = Field(description="Id of the folder.")
    parent_id: str | None = Field(description="New parent folder; null for the root.")


@guarded
async def move_folder(args: MoveFolderArgs, ctx: ToolContext) -> ToolResult:
    folder = await _store(ctx).move_folder(args.folder_id, args.parent_id, ctx.run)
    return ToolResult.ok(f"moved folder '{folder.name}'", data=folder.to_wire())


def core_tools() -> list[Tool]:
    """The tools of the ``core`` toolbox."""
    spec: list[ToolSpec] = [
        ("readFile", "Read a text file, optionally only lines startLine..endLine.", ReadFileArgs, read_file, True),
        ("listFiles", "List files, filtered by folder, tags or a name search.", ListFilesArgs, list_files, True),
        ("searchInFileContent", "Find lines containing a text in the files' content.", SearchInFileContentArgs, search_in_file_content, True),
        ("writeFile", "Create a file, or append to / overwrite an existing one. A created file is also returned as a docItem reference for documentList arguments.", WriteFileArgs, write_file, False),
        ("deleteFile", "Delete a file.", FileIdArgs, delete_file, False),
        ("renameFile", "Rename a file.", RenameFileArgs, rename_file, False),
        ("moveFile", "Move a file into a folder (null: the root).", MoveFileArgs, move_file, False),
        ("tagFile", "Set, add or remove tags of a file.", TagFileArgs, tag_file, False),
        ("copyFile", "Make an independent copy of a file.", CopyFileArgs, copy_file, False),
        ("replaceInFile", "Replace exact text in a text file.", ReplaceInFileArgs, replace_in_file, False),
        ("listFolders", "List folders (one level, or all with recursive).", ListFoldersArgs, list_folders, True),
        ("createFolder", "Create a folder.", CreateFolderArgs, create_folder, False),
        ("deleteFolder", "Delete a folder; with recursive also its content.", DeleteFolderArgs, delete_folder, False),
        ("renameFolder", "Rename a folder.", RenameFolderArgs, rename_folder, False),
        ("moveFolder", "Move a folder under another (null: the root).", MoveFolderArgs, move_folder, False),
    ]  # fmt: skip
    return tools_from(spec)


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The kernel's ``core`` toolbox (always active): the workspace's files and folders,
    and the cross-workflow tools (top-level runs only)."""
    from nyla.tools.history import history_tools

    return [
        Toolbox(
            id="core",
            label="Files and folders",
            description="Read, search, write and organize the workspace's files and folders; "
            "look back at your earlier workflows.",
            tools=core_tools() + history_tools(),
            default_active=True,
        )
    ]
