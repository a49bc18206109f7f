// The official JS SDK (@a2a-js/sdk) as a client of `accord serve`: every operation over one
// binding, each check an assertion of its own. Run by tests/interop/test_js_client.py:
//
//   node client_checks.mjs <base URL> <JSONRPC|HTTP+JSON|GRPC> <bearer token>
//
// Prints one JSON object on stdout: {"<check>": {"ok": true} | {"ok": false, "error": "..."}}.
// The agent served is tests/interop/accord_test_agents.py (`slow`, `tick N DELAY`, `ask`,
// `direct TEXT`, anything else echoes).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTasksRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  TaskState,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import {
  A2AError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
} from '@a2a-js/sdk/errors';

const [baseUrl, binding, token] = process.argv.slice(2);

async function connect() {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory(), new RestTransportFactory(), new GrpcTransportFactory()],
    preferredTransports: [binding],
  });
  return new ClientFactory(options).createFromUrl(baseUrl);
}

function request(text, configuration = {}, extra = {}) {
  return SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra },
    configuration,
  });
}

const immediately = { returnImmediately: true };

function stateOf(event) {
  const { $case, value } = event.payload;
  if ($case === 'task' || $case === 'statusUpdate') return value.status.state;
  return undefined;
}

function texts(artifacts) {
  return artifacts.flatMap((a) => a.parts.map((p) => p.content?.value)).join('');
}

async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

async function rejects(promise, errorClass) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof errorClass, `expected ${errorClass.name}, got ${err?.name}: ${err}`);
    return true;
  });
}

const checks = {
  async card_names_the_binding(client) {
    const card = await new DefaultAgentCardResolver().resolve(baseUrl);
    assert.ok(card.supportedInterfaces.some((i) => i.protocolBinding === binding));
    assert.equal(client.transport.protocolName, binding);
  },

  async send_returns_the_completed_task(client) {
    const result = await client.sendMessage(request('hello'));
    assert.equal(result.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(texts(result.artifacts), 'echo: hello');
  },

  async send_with_a_direct_answer_is_a_message(client) {
    const result = await client.sendMessage(request('direct hi'));
    assert.equal(result.role !== undefined && result.parts[0].content.value, 'direct: hi');
  },

  async stream_yields_the_task_then_updates(client) {
    const events = await collect(client.sendMessageStream(request('tick 3 0.02')));
    assert.equal(events[0].payload.$case, 'task');
    assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_COMPLETED);
    const chunks = events
      .filter((e) => e.payload.$case === 'artifactUpdate')
      .map((e) => e.payload.value.artifact.parts[0].content.value);
    assert.deepEqual(chunks, ['chunk 0;', 'chunk 1;', 'chunk 2;']);
  },

  async get_honours_history_length(client) {
    const task = await client.sendMessage(request('hello'));
    const full = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
    assert.equal(full.id, task.id);
    assert.ok(full.history.length >= 1);
    const none = await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 0 }));
    assert.equal(none.history.length, 0);
  },

  async list_pages_through_one_context(client) {
    const contextId = randomUUID();
    for (let i = 0; i < 3; i++) await client.sendMessage(request(`hello ${i}`, {}, { contextId }));
    const first = await client.listTasks(ListTasksRequest.fromJSON({ contextId, pageSize: 2 }));
    assert.equal(first.tasks.length, 2);
    assert.ok(first.nextPageToken);
    const second = await client.listTasks(
      ListTasksRequest.fromJSON({ contextId, pageSize: 2, pageToken: first.nextPageToken })
    );
    assert.equal(second.tasks.length, 1);
    assert.equal(second.nextPageToken, '');
    const done = await client.listTasks(
      ListTasksRequest.fromJSON({ contextId, status: 'TASK_STATE_COMPLETED' })
    );
    assert.equal(done.tasks.length, 3);
  },

  async cancel_stops_a_running_task(client) {
    const task = await client.sendMessage(request('slow', immediately));
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id }));
    assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);
    await rejects(client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id })), TaskNotCancelableError);
  },

  async subscribe_follows_a_task_to_its_end(client) {
    const task = await client.sendMessage(request('tick 4 0.05', immediately));
    const events = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: task.id })));
    assert.equal(events[0].payload.$case, 'task');
    assert.equal(events[0].payload.value.id, task.id);
    assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_COMPLETED);
  },

  async subscribe_resumes_after_a_disconnect(client) {
    const task = await client.sendMessage(request('tick 8 0.1', immediately));
    const abort = new AbortController();
    const before = [];
    try {
      for await (const event of client.resubscribeTask(
        SubscribeToTaskRequest.fromJSON({ id: task.id }),
        { signal: abort.signal }
      )) {
        before.push(event);
        if (before.length === 2) abort.abort(); // the client goes away; the task goes on
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
    assert.equal(before[0].payload.value.id, task.id);
    const again = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: task.id })));
    const snapshot = again[0].payload.value;
    assert.equal(snapshot.id, task.id);
    assert.equal(stateOf(again.at(-1)), TaskState.TASK_STATE_COMPLETED);
    // What the snapshot holds plus the updates after it make the whole artifact.
    const later = again
      .filter((e) => e.payload.$case === 'artifactUpdate')
      .map((e) => e.payload.value.artifact.parts[0].content.value)
      .join('');
    const whole = Array.from({ length: 8 }, (_, i) => `chunk ${i};`).join('');
    assert.equal(texts(snapshot.artifacts) + later, whole);
  },

  async subscribe_follows_an_input_required_task_through_the_next_turn(client) {
    const waiting = await client.sendMessage(request('ask'));
    assert.equal(waiting.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const stream = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: waiting.id }));
    const first = await stream.next();
    assert.equal(first.value.payload.value.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    await client.sendMessage(request('now', {}, { taskId: waiting.id, contextId: waiting.contextId }));
    const rest = [];
    for (let next = await stream.next(); !next.done; next = await stream.next()) rest.push(next.value);
    assert.equal(stateOf(rest.at(-1)), TaskState.TASK_STATE_COMPLETED);
  },

  async push_configs_create_get_list_delete(client) {
    const task = await client.sendMessage(request('hello'));
    const created = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({
        taskId: task.id,
        id: 'cfg-1',
        url: 'https://example.com/hook',
        token: 'tok',
      })
    );
    assert.deepEqual([created.taskId, created.id, created.url], [task.id, 'cfg-1', 'https://example.com/hook']);
    const got = await client.getTaskPushNotificationConfig(
      GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: 'cfg-1' })
    );
    assert.equal(got.token, 'tok');
    const listed = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id })
    );
    assert.deepEqual(listed.configs.map((c) => c.id), ['cfg-1']);
    await client.deleteTaskPushNotificationConfig(
      DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: 'cfg-1' })
    );
    const after = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id })
    );
    assert.deepEqual(after.configs, []);
    await rejects(
      client.getTaskPushNotificationConfig(
        GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: 'cfg-1' })
      ),
      TaskNotFoundError
    );
  },

  async extended_card_with_the_bearer_token(client) {
    const card = await client.getAgentCard({
      serviceParameters: { Authorization: `Bearer ${token}` },
    });
    assert.ok(card.description.includes('extended'), card.description);
    assert.equal(card.capabilities.extendedAgentCard, true);
  },

  async extended_card_without_credentials_is_refused(client) {
    await assert.rejects(
      client.transport.getExtendedAgentCard(GetExtendedAgentCardRequest.fromJSON({}), {
        serviceParameters: { 'A2A-Version': '1.0' },
      }),
      (err) => {
        // The SDK has no class for "unauthenticated": an A2AError with the binding's own code.
        assert.ok(err instanceof A2AError, `${err?.name}: ${err}`);
        if (binding === 'JSONRPC') assert.equal(err.envelopeCode, -32012);
        if (binding === 'HTTP+JSON') assert.equal(err.statusCode, 401);
        // (gRPC: the status code, UNAUTHENTICATED = 16, is only in the message)
        if (binding === 'GRPC') assert.match(err.message, /: 16 /);
        assert.match(err.message, /needs authentication/);
        return true;
      }
    );
  },

  async unknown_task_is_task_not_found(client) {
    await rejects(client.getTask(GetTaskRequest.fromJSON({ id: 'no-such-task' })), TaskNotFoundError);
    await rejects(client.cancelTask(CancelTaskRequest.fromJSON({ id: 'no-such-task' })), TaskNotFoundError);
    await rejects(
      collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: 'no-such-task' }))),
      TaskNotFoundError
    );
  },

  async a_terminal_task_refuses_messages_and_subscriptions(client) {
    const task = await client.sendMessage(request('hello'));
    const again = request('again', {}, { taskId: task.id, contextId: task.contextId });
    await rejects(client.sendMessage(again), UnsupportedOperationError);
    await rejects(
      collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: task.id }))),
      UnsupportedOperationError
    );
  },

  async an_unsupported_version_is_refused(client) {
    // The client puts its own A2A-Version on every call; the transport does not.
    await rejects(
      client.transport.getTask(GetTaskRequest.fromJSON({ id: 'anything' }), {
        serviceParameters: { 'A2A-Version': '99.0' },
      }),
      VersionNotSupportedError
    );
  },
};

const results = {};
let client;
try {
  client = await connect();
} catch (err) {
  for (const name of Object.keys(checks)) results[name] = { ok: false, error: `connect: ${err}` };
}
if (client) {
  for (const [name, check] of Object.entries(checks)) {
    try {
      await check(client);
      results[name] = { ok: true };
    } catch (err) {
      results[name] = { ok: false, error: String(err?.stack ?? err) };
    }
  }
}
process.stdout.write(JSON.stringify(results) + '\n');
// A gRPC channel keeps the event loop alive; the checks are done.
process.exit(0);
