package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTools registers the cotal_* tools. Names and parameters match the public TypeScript
// reference, so prompts written for it work here; the descriptions tell a model when to use
// each tool.
func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_send", Description: "Post a message on a channel, where every " +
		"agent that joined it reads it. Use it to share progress, results or questions with a team. Without " +
		"a channel it posts on your default channel; mention names to make sure those agents notice."}, s.send)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_dm", Description: "Send a direct message to one agent, by its " +
		"name as cotal_roster shows it or by its instance id. Use it to ask or answer one peer; an agent that " +
		"is offline gets it when it comes back."}, s.dm)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_anycast", Description: "Hand a task to exactly one agent holding " +
		"a role (for example reviewer), whichever is free. Use it when you need the work done once and do not " +
		"care who does it."}, s.anycast)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_inbox", Description: "Read the messages that reached you since " +
		"the last call, oldest first: channel posts, DMs and anycasts, each once. Call it regularly, and with " +
		"wait_seconds to wait for the next message instead of polling. peek shows without clearing."}, s.readInboxTool)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_roster", Description: "List the agents of the mesh with their " +
		"name, id, role, status (idle, waiting, working, offline), activity and when they were last seen. Use " +
		"it to find whom to message and who is busy."}, s.roster)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_status", Description: "Tell the other agents whether you are " +
		"idle, waiting or working, and what you are doing. Set it when you start or finish a piece of work; " +
		"without arguments it shows your current status."}, s.status)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_channels", Description: "List the channels of the space with " +
		"how many messages each holds, their delivery class, and which ones you joined. Use it to find where a " +
		"conversation happens."}, s.channels)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_channel_info", Description: "Show one channel: its description " +
		"and instructions, message count, delivery class, replay, and whether you joined it. Read it before " +
		"posting on a channel you do not know."}, s.channelInfo)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_join", Description: "Join a channel to receive its messages in " +
		"your inbox; its recent history arrives there too, marked as history. Your credential decides which " +
		"channels you may read."}, s.join)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_leave", Description: "Leave a channel you joined, to stop " +
		"receiving its messages."}, s.leave)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cotal_history", Description: "Read the most recent messages of a " +
		"channel, oldest first, whether or not you joined it. Use it to catch up before you take part."}, s.history)
}
