// A small agent on the official JS SDK (@a2a-js/sdk): the peer accord's client, CLI and
// harness delegation talk to in tests/interop/test_js_server.py, and the JS hop of the
// traversal (tests/interop/test_traversal.py).
//
//   node agent.mjs --port P --grpc-port G [--token T] [--name js-sdk]
//
// JSON-RPC at /a2a/jsonrpc, HTTP+JSON at /a2a/rest (express), gRPC on G; the card at
// /.well-known/agent-card.json lists the three, JSON-RPC first. Tasks and push configs live
// in memory; the SDK's own sender POSTs each event to the push configs registered. With
// --token, every call but the card needs `Authorization: Bearer T` (gRPC: that metadata);
// others get 401 (gRPC UNAUTHENTICATED). Prints `READY` once both servers listen.
//
// What a message asks, by its text (first word):
//   slow         works until the task is canceled
//   tick N D     N chunks of one artifact, D seconds apart, then completes
//   ask          requires input; the next message completes the task with `got: <text>`
//   else         one artifact `echo: <text>`, then completes
// A message with a traversal part (traversal.mjs) is a hop of the traversal instead.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import express from 'express';
import { Server, ServerCredentials, status as grpcStatus } from '@grpc/grpc-js';
import { AGENT_CARD_PATH, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';

import { traversalOf, runHop } from './traversal.mjs';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    'grpc-port': { type: 'string' },
    token: { type: 'string', default: '' },
    name: { type: 'string', default: 'js-sdk' },
  },
});
const HOST = '127.0.0.1';
const PORT = Number(args.port);
const GRPC_PORT = Number(args['grpc-port']);

const interfaces = [
  ['JSONRPC', `http://${HOST}:${PORT}/a2a/jsonrpc`],
  ['HTTP+JSON', `http://${HOST}:${PORT}/a2a/rest`],
  ['GRPC', `${HOST}:${GRPC_PORT}`],
];
const bearer = args.token
  ? { securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }] }
  : { securitySchemes: {}, securityRequirements: [] };

const card = {
  name: 'JS SDK agent',
  description: 'Echoes, streams, waits and forwards traversal hops (@a2a-js/sdk).',
  supportedInterfaces: interfaces.map(([protocolBinding, url]) => ({
    url,
    protocolBinding,
    tenant: '',
    protocolVersion: '1.0',
  })),
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
  ...bearer,
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes text', tags: ['echo'], examples: [],
             inputModes: [], outputModes: [], securityRequirements: [] }],
  documentationUrl: '',
  signatures: [],
};

const now = () => new Date().toISOString();
const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' });

function agentMessage(taskId, contextId, text) {
  return { messageId: randomUUID(), contextId, taskId, role: 2 /* ROLE_AGENT */, parts: [textPart(text)],
           metadata: undefined, extensions: [], referenceTaskIds: [] };
}

// The publishing side of one task: what every behaviour below emits.
class Publisher {
  constructor(bus, taskId, contextId) {
    Object.assign(this, { bus, taskId, contextId });
  }
  status(state, text) {
    const message = text === undefined ? undefined : agentMessage(this.taskId, this.contextId, text);
    this.bus.publish(AgentEvent.statusUpdate({
      taskId: this.taskId, contextId: this.contextId,
      status: { state, message, timestamp: now() }, metadata: undefined,
    }));
  }
  artifact(text, { id = 'echo', append = false, lastChunk = true } = {}) {
    this.bus.publish(AgentEvent.artifactUpdate({
      taskId: this.taskId, contextId: this.contextId,
      artifact: { artifactId: id, name: id, description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
      append, lastChunk, metadata: undefined,
    }));
  }
}

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

class Agent {
  constructor(name) {
    this.name = name;
    this.waiting = new Map(); // task id -> {contextId, resolve}: what ends its wait at a cancel
  }

  async execute(context, bus) {
    const message = context.userMessage;
    const { taskId, contextId } = context;
    if (!context.task) {
      bus.publish(AgentEvent.task({
        id: taskId, contextId, artifacts: [], history: [message], metadata: undefined,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      }));
    }
    const out = new Publisher(bus, taskId, contextId);
    const text = message.parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
    const [word, ...rest] = text.split(' ');
    const instruction = traversalOf(message);
    if (context.task) { // the next turn of an input-required task
      out.status(TaskState.TASK_STATE_WORKING);
      out.artifact(`got: ${text}`);
      out.status(TaskState.TASK_STATE_COMPLETED);
    } else if (instruction) {
      out.status(TaskState.TASK_STATE_WORKING);
      await runHop(this.name, instruction, out, () => this.until(taskId, contextId));
    } else if (word === 'slow') {
      out.status(TaskState.TASK_STATE_WORKING);
      await this.until(taskId, contextId);
    } else if (word === 'tick') {
      const count = Number(rest[0] ?? 5);
      const delay = Number(rest[1] ?? 0.05);
      out.status(TaskState.TASK_STATE_WORKING);
      for (let i = 0; i < count; i++) {
        await sleep(delay);
        out.artifact(`chunk ${i};`, { id: 'ticks', append: i > 0, lastChunk: i === count - 1 });
      }
      out.status(TaskState.TASK_STATE_COMPLETED);
    } else if (word === 'ask') {
      out.status(TaskState.TASK_STATE_INPUT_REQUIRED, 'what else?');
    } else {
      out.status(TaskState.TASK_STATE_WORKING);
      out.artifact(`echo: ${text}`);
      out.status(TaskState.TASK_STATE_COMPLETED);
    }
  }

  // Resolves once the task is canceled (cancelTask below).
  until(taskId, contextId) {
    return new Promise((resolve) => this.waiting.set(taskId, { contextId, resolve }));
  }

  async cancelTask(taskId, bus) {
    const waiting = this.waiting.get(taskId);
    this.waiting.delete(taskId);
    new Publisher(bus, taskId, waiting?.contextId ?? '').status(TaskState.TASK_STATE_CANCELED);
    waiting?.resolve();
  }
}

const taskStore = new InMemoryTaskStore();
const pushStore = new InMemoryPushNotificationStore();
const handler = new DefaultRequestHandler(
  card, taskStore, new Agent(args.name), undefined, pushStore,
  new DefaultPushNotificationSender(pushStore, { timeout: 5000 }),
);

// --- credentials -------------------------------------------------------------------------

const authorized = (value) => !args.token || value === `Bearer ${args.token}`;

const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
app.use((req, res, next) => {
  if (authorized(req.get('authorization'))) return next();
  res.status(401).set('WWW-Authenticate', 'Bearer');
  // HTTP+JSON: the binding's error body; JSON-RPC: a bare 401, as authenticating middleware
  // in front of a JSON-RPC endpoint answers.
  if (req.path.startsWith('/a2a/rest')) {
    res.json({ error: { code: 401, status: 'UNAUTHENTICATED', message: 'a bearer token is needed', details: [] } });
  } else {
    res.type('text/plain').send('a bearer token is needed');
  }
});
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

// gRPC: each method checks the metadata first (the SDK's user builder cannot refuse a call
// with UNAUTHENTICATED: what it throws becomes UNKNOWN).
const STREAMING = new Set(['sendStreamingMessage', 'subscribeToTask']);
const service = grpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication });
const guarded = Object.fromEntries(Object.entries(service).map(([method, implementation]) => [
  method,
  (call, callback) => {
    if (authorized(call.metadata.get('authorization')[0]?.toString())) return implementation(call, callback);
    const refusal = { code: grpcStatus.UNAUTHENTICATED, details: 'a bearer token is needed' };
    if (STREAMING.has(method)) return call.emit('error', refusal);
    return callback(refusal, null);
  },
]));

const grpcServer = new Server();
grpcServer.addService(A2AService, guarded);
let listening = 0;
const ready = () => { if (++listening === 2) console.log('READY'); };
grpcServer.bindAsync(`${HOST}:${GRPC_PORT}`, ServerCredentials.createInsecure(), (err) => {
  if (err) { console.error(err); process.exit(1); }
  ready();
});
const http = app.listen(PORT, HOST, ready);
http.on('error', (err) => { console.error(err); process.exit(1); });
const stop = () => { http.close(); grpcServer.forceShutdown(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
