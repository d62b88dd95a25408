package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cotal-go/cotal/internal/termsafe"
)

// addTools registers the cotal_* tools. Names and parameters match the public TypeScript
// reference, so prompts written for it work here; the descriptions tell a model when to use
// each tool. Each result escapes what peers chose with termsafe: the views where they are
// built, the error text by escapedErrors.
func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_orientation", Description: "Show who you are on the mesh and what you " +
		"can do: your name, role and space, the channels you may read and post on, your tools, who is present and " +
		"what waits unread. Call it first, and again when you are unsure. Read-only.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, escapedErrors(s.orientation))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_send", Description: "Post a message on a channel, where every " +
		"agent that joined it reads it. Use it to share progress, results or questions with a team. Without " +
		"a channel it posts on your default channel; mention names to make sure those agents notice."}, escapedErrors(s.send))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_dm", Description: "Send a direct message to one agent, by its " +
		"name as cotal_roster shows it or by its instance id. Use it to ask or answer one peer; an agent that " +
		"is offline gets it when it comes back."}, escapedErrors(s.dm))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_anycast", Description: "Hand a task to exactly one agent holding " +
		"a role (for example reviewer), whichever is free. Use it when you need the work done once and do not " +
		"care who does it."}, escapedErrors(s.anycast))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_inbox", Description: "Read the messages that reached you since " +
		"the last call, oldest first: channel posts, DMs and anycasts, each once. Call it regularly, and with " +
		"wait_seconds to wait for the next message instead of polling. peek shows without clearing."}, escapedErrors(s.readInboxTool))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_roster", Description: "List the agents of the mesh with their " +
		"name, id, role, status (idle, waiting, working, offline), activity and when they were last seen. Use " +
		"it to find whom to message and who is busy."}, escapedErrors(s.roster))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_status", Description: "Tell the other agents whether you are " +
		"idle, waiting or working, and what you are doing. Set it when you start or finish a piece of work; " +
		"without arguments it shows your current status."}, escapedErrors(s.status))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_channels", Description: "List the channels of the space with " +
		"how many messages each holds, their delivery class, and which ones you joined. Use it to find where a " +
		"conversation happens."}, escapedErrors(s.channels))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_channel_info", Description: "Show one channel: its description " +
		"and instructions, message count, delivery class, replay, and whether you joined it. Read it before " +
		"posting on a channel you do not know."}, escapedErrors(s.channelInfo))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_join", Description: "Join a channel to receive its messages in " +
		"your inbox; its recent history arrives there too, marked as history, and the result shows the channel " +
		"operator's note. Your credential decides which channels you may read."}, escapedErrors(s.join))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_leave", Description: "Leave a channel you joined, to stop " +
		"receiving its messages."}, escapedErrors(s.leave))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_history", Description: "Read the most recent messages of a " +
		"channel, oldest first, whether or not you joined it. Use it to catch up before you take part."}, escapedErrors(s.history))
}

// escapedErrors is h with its error's text escaped by termsafe: an error can quote a name, a
// channel or the mesh's own error text, and the SDK hands it to the model as the result. A
// JSON-RPC error, which the SDK sends as a protocol error only when it is one itself, is
// passed as it is.
func escapedErrors[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if _, protocol := err.(*jsonrpc.Error); err != nil && !protocol {
			err = escapedError{err}
		}
		return res, out, err
	}
}

// escapedError is an error whose text is escaped by termsafe; errors.Is and errors.As see the
// error it wraps.
type escapedError struct{ err error }

func (e escapedError) Error() string { return termsafe.Text(e.err.Error()) }
func (e escapedError) Unwrap() error { return e.err }
