// A deterministic LangGraph agent (no model call, so it runs offline): it keeps a conversation's notes in the
// graph's `messages` state and answers from them. `egress-agent a2a serve --config examples/agent-server/graph.json`
// serves it as the assistant `notes`.
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

const NotesState = Annotation.Root({
  ...MessagesAnnotation.spec,
  /** Set by an A2A data part ({"tone": "loud"}): the answer in capitals. */
  tone: Annotation<string | undefined>(),
});

const textOf = (message: BaseMessage) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content));

function answer(state: typeof NotesState.State) {
  const said = state.messages.filter((message) => message.getType() === "human").map(textOf);
  const last = said.at(-1) ?? "";
  let reply: string;
  if (/^(recall|what did i say)/i.test(last.trim())) {
    const earlier = said.slice(0, -1);
    reply = earlier.length === 0 ? "You have not told me anything yet." : `You told me: ${earlier.map((text) => `"${text}"`).join(", ")}.`;
  } else {
    reply = `Noted: "${last}". That is note ${said.length} of this conversation.`;
  }
  return { messages: [new AIMessage(state.tone === "loud" ? reply.toUpperCase() : reply)] };
}

export const graph = new StateGraph(NotesState).addNode("answer", answer).addEdge(START, "answer").addEdge("answer", END).compile();
