// One hop of the traversal (tests/interop/test_traversal.py), on the official JS SDK.
//
// The instruction travels as a data part of media type application/vnd.accord.traversal+json:
//
//   {"hold": false,
//    "call": {"card": "<base URL of the next agent>", "transport": "JSONRPC|HTTP+JSON|GRPC",
//             "mode": "send|stream|push|resubscribe",
//             "push": {"url": "...", "token": "..."},      (mode push: the callee's webhook)
//             "then": <the instruction for the next agent>}}
//
// A hop with a `call` resolves the next agent's card, calls it over the transport named, in the
// mode named, and reads the next agent's trace from its answer; one without is the last. Its
// own trace is its record followed by the next agent's:
//
//   [{"agent": "<name>", "transport": "...", "mode": "...", "callee": "<state the callee ended in>"}, ...]
//
// It answers with the trace as an artifact `trace` and completes, or, with `hold`, says it
// in a WORKING status message and waits until it is canceled. In mode `resubscribe` the
// caller streams, drops the stream after the first event, subscribes again, reads the trace
// from the status and cancels the callee.
import { randomUUID } from 'node:crypto';

import {
  CancelTaskRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskState,
  taskStateToJSON,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';

export const TRAVERSAL = 'application/vnd.accord.traversal+json';

export function traversalOf(message) {
  const part = message.parts.find((p) => p.mediaType === TRAVERSAL && p.content?.$case === 'data');
  return part?.content.value;
}

async function clientFor(card, transport) {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory(), new RestTransportFactory(), new GrpcTransportFactory()],
    preferredTransports: [transport],
  });
  const client = await new ClientFactory(options).createFromUrl(card);
  if (client.transport.protocolName !== transport) {
    throw new Error(`${card} offers no ${transport} interface`);
  }
  return client;
}

function textsOf(message) {
  return (message?.parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value);
}

function traceIn(texts) {
  for (const text of texts) {
    try {
      const trace = JSON.parse(text);
      if (Array.isArray(trace)) return trace;
    } catch {
      // not the trace
    }
  }
  return undefined;
}

const artifactTexts = (artifacts) => artifacts.filter((a) => a.artifactId === 'trace').flatMap((a) => textsOf(a));

// Calls the next agent as `call` says; its trace and the state its task ended in.
async function callNext(call) {
  const client = await clientFor(call.card, call.transport);
  const configuration = call.mode === 'push'
    ? { taskPushNotificationConfig: { url: call.push.url, token: call.push.token } }
    : {};
  const request = SendMessageRequest.fromJSON({
    message: {
      messageId: randomUUID(),
      role: 'ROLE_USER',
      parts: [{ data: call.then, mediaType: TRAVERSAL }],
    },
    configuration,
  });
  if (call.mode === 'send' || call.mode === 'push') {
    const task = await client.sendMessage(request);
    return [traceIn(artifactTexts(task.artifacts)), task.status.state];
  }
  if (call.mode === 'stream') {
    let trace;
    let state;
    for await (const event of client.sendMessageStream(request)) {
      const { $case, value } = event.payload;
      if ($case === 'artifactUpdate') trace ??= traceIn(artifactTexts([value.artifact]));
      if ($case === 'task' || $case === 'statusUpdate') state = value.status.state;
    }
    return [trace, state];
  }
  if (call.mode === 'resubscribe') {
    let taskId;
    for await (const event of client.sendMessageStream(request)) {
      const { $case, value } = event.payload;
      taskId = $case === 'task' ? value.id : value.taskId;
      break; // the caller goes away after the first event
    }
    let trace;
    for await (const event of client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: taskId }))) {
      const { $case, value } = event.payload;
      if ($case === 'task' || $case === 'statusUpdate') trace = traceIn(textsOf(value.status.message));
      if (trace) break;
    }
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: taskId }));
    return [trace, canceled.status.state];
  }
  throw new Error(`unknown mode ${call.mode}`);
}

// Carries out `instruction` as agent `name`, publishing through `out` (agent.mjs's Publisher);
// `canceled()` resolves when the task is canceled.
export async function runHop(name, instruction, out, canceled) {
  let trace = [{ agent: name }];
  try {
    if (instruction.call) {
      const { transport, mode } = instruction.call;
      const [rest, state] = await callNext(instruction.call);
      if (!rest) throw new Error(`no trace from ${instruction.call.card}`);
      trace = [{ agent: name, transport, mode, callee: taskStateToJSON(state) }, ...rest];
    }
  } catch (err) {
    out.status(TaskState.TASK_STATE_FAILED, `${name}: ${err?.stack ?? err}`);
    return;
  }
  if (instruction.hold) {
    out.status(TaskState.TASK_STATE_WORKING, JSON.stringify(trace));
    await canceled();
  } else {
    out.artifact(JSON.stringify(trace), { id: 'trace' });
    out.status(TaskState.TASK_STATE_COMPLETED);
  }
}
