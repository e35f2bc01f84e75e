'use strict';
// The OpenAI Agents SDK offline: a Model (the SDK's interface) that answers each request with
// the next canned response, and never a network call (fetch is replaced by one that throws,
// and tracing is off).

const { Usage, setTracingDisabled } = require('@openai/agents');

setTracingDisabled(true);
globalThis.fetch = async (url) => {
  throw new Error(`offline: a request to ${url} was attempted`);
};

class ScriptedModel {
  constructor(turns) {
    this.turns = [...turns];
    this.requests = 0;
  }

  async getResponse(_request) {
    this.requests += 1;
    const output = this.turns.shift();
    if (output === undefined) throw new Error('the script has no response left');
    return { usage: new Usage(), output, responseId: `scripted-${this.requests}` };
  }

  async *getStreamedResponse(_request) {
    throw new Error('the scripted model does not stream');
  }
}

function functionCall(name, args, callId) {
  const text = JSON.stringify(args);
  return { type: 'function_call', callId, name, arguments: text, status: 'completed' };
}

function assistantMessage(text) {
  return {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text }],
  };
}

module.exports = { ScriptedModel, assistantMessage, functionCall };
