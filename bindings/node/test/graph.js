'use strict';
// The LangGraph.js graph the framework tests build: one node between START and END.

const { END, START, StateGraph } = require('@langchain/langgraph');

/** The graph of `State` whose one node, `name`, is `node`, its checkpoints in `checkpointer`. */
function oneNode(State, name, node, checkpointer) {
  return new StateGraph(State)
    .addNode(name, node)
    .addEdge(START, name)
    .addEdge(name, END)
    .compile({ checkpointer });
}

module.exports = { oneNode };
